package lock

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// MaxKeyBytes is Firestore's limit on a document ID.
const MaxKeyBytes = 1500

// ValidateKey reports whether key can name a lock document: Firestore
// document IDs are non-empty UTF-8 of at most 1500 bytes, contain no "/",
// are not "." or "..", and do not match the reserved __.*__ form.
// The error wraps ErrInvalidKey. No RPC.
func ValidateKey(key string) error {
	switch {
	case key == "":
		return fmt.Errorf("%w: empty", ErrInvalidKey)
	case len(key) > MaxKeyBytes:
		return fmt.Errorf("%w: %d bytes, more than %d", ErrInvalidKey, len(key), MaxKeyBytes)
	case !utf8.ValidString(key):
		return fmt.Errorf("%w: %q is not valid UTF-8", ErrInvalidKey, key)
	case strings.Contains(key, "/"):
		return fmt.Errorf("%w: %q contains a slash", ErrInvalidKey, key)
	case key == "." || key == "..":
		return fmt.Errorf("%w: %q", ErrInvalidKey, key)
	case len(key) >= 4 && strings.HasPrefix(key, "__") && strings.HasSuffix(key, "__"):
		return fmt.Errorf("%w: %q has the reserved __name__ form", ErrInvalidKey, key)
	}
	return nil
}

// validateKeys checks every key and rejects duplicates.
func validateKeys(keys []string) error {
	if len(keys) == 0 {
		return fmt.Errorf("%w: no keys", ErrInvalidKey)
	}
	if len(keys) > MaxKeys {
		return fmt.Errorf("%w: %d keys, more than %d in one acquisition", ErrInvalidKey, len(keys), MaxKeys)
	}
	seen := make(map[string]bool, len(keys))
	for _, k := range keys {
		if err := ValidateKey(k); err != nil {
			return err
		}
		if seen[k] {
			return fmt.Errorf("%w: %q appears twice", ErrInvalidKey, k)
		}
		seen[k] = true
	}
	return nil
}
