package sale

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"

	"github.com/firelock/firelock/booking"
)

// DecodeSale decodes configure's sale object from JSON as Operate takes
// it (CONTRACT §8): each field's value as encoding/json gives it, numbers
// as float64. A field given twice, whose last value would win over the one
// a log or a proxy looked at, is ErrInvalidSale; so is a number no float64
// holds (1e400), which stays a json.Number that no field accepts, so the
// message names the field. A value that is not one object (or one with
// anything but space after it) is booking.ErrInvalidArgument.
func DecodeSale(raw []byte) (map[string]any, error) {
	notObject := fmt.Errorf("%w: sale must be an object of §7 fields, e.g. {\"admitPerMinute\": 600}", booking.ErrInvalidArgument)
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, notObject
	}
	out := map[string]any{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, notObject
		}
		key, _ := t.(string)
		if _, seen := out[key]; seen {
			return nil, fmt.Errorf("%w: %v", ErrInvalidSale, &FieldError{Field: "sale", Problem: fmt.Sprintf("sale.%s appears more than once", key)})
		}
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, notObject
		}
		if n, ok := v.(json.Number); ok {
			if f, err := strconv.ParseFloat(string(n), 64); err == nil {
				v = f
			}
		}
		out[key] = v
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return nil, notObject
	}
	if _, err := dec.Token(); err != io.EOF { // nothing after it
		return nil, notObject
	}
	return out, nil
}
