package kubeletcompat

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"strings"
)

// keySet maps the JSON keys of one object to the key sets of the objects
// below them (nil where the value holds no object).
type keySet map[string]keySet

// fileKeys are the keys of File, derived from its json tags.
var fileKeys = keysOf(reflect.TypeOf(File{}))

func keysOf(t reflect.Type) keySet {
	for t.Kind() == reflect.Ptr || t.Kind() == reflect.Slice {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || t.PkgPath() != reflect.TypeOf(File{}).PkgPath() {
		return nil
	}
	keys := keySet{}
	for i := 0; i < t.NumField(); i++ {
		name := strings.Split(t.Field(i).Tag.Get("json"), ",")[0]
		if name != "" && name != "-" {
			keys[name] = keysOf(t.Field(i).Type)
		}
	}
	return keys
}

// checkKeys refuses what encoding/json quietly accepts: a key given twice
// in one object (the last would win) and a key in another case than the
// field it would fill. Unknown keys are left to the decoder.
func checkKeys(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	err := checkValue(dec, fileKeys, "", 0)
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

func checkValue(dec *json.Decoder, keys keySet, path string, depth int) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	delim, ok := tok.(json.Delim)
	if !ok || delim == '}' || delim == ']' {
		return nil // a scalar; stray closers are the decoder's to report
	}
	if depth >= maxNesting {
		return fmt.Errorf("%s: nested deeper than %d levels", pathOrTop(path), maxNesting)
	}
	if delim == '[' {
		for dec.More() {
			if err := checkValue(dec, keys, path+"[]", depth+1); err != nil {
				return err
			}
		}
		_, err := dec.Token()
		return err
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		key, _ := tok.(string)
		if seen[key] {
			return fmt.Errorf("%s: key %q given twice", pathOrTop(path), truncate(key))
		}
		seen[key] = true
		if _, known := keys[key]; !known {
			for field := range keys {
				if strings.EqualFold(field, key) {
					return fmt.Errorf("%s: key %q: the field is %q", pathOrTop(path), key, field)
				}
			}
		}
		if err := checkValue(dec, keys[key], path+"."+key, depth+1); err != nil {
			return err
		}
	}
	_, err = dec.Token()
	return err
}

func pathOrTop(path string) string {
	if path == "" {
		return "top level"
	}
	return strings.TrimPrefix(path, ".")
}
