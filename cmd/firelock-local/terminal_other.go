//go:build !linux && !darwin

package main

func takeTerminal() (giveBack func()) { return func() {} }
