package proto

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/go-json-experiment/json/jsontext"
)

// Canonicalize returns the RFC 8785 JSON Canonicalization Scheme (JCS)
// form of the JSON value b, the form eddsa-jcs-2022 signs and the group
// log names operations by. It rejects invalid UTF-8, duplicate member
// names (which JCS leaves undefined) and numbers beyond an IEEE 754
// double (which JCS cannot represent). b is not modified.
//
// It is jsontext's canonicaliser (one pass over the text, one
// allocation), about six times as fast as a parse into a tree and
// re-serialisation; TestCanonicalizeAgrees checks it against an
// independent implementation.
func Canonicalize(b []byte) ([]byte, error) {
	v := jsontext.Value(bytes.Clone(b))
	if err := v.Canonicalize(); err != nil {
		return nil, err
	}
	// jsontext clamps a number past the largest double to it; such a
	// number is an error in JCS. Only then is the text read again.
	if bytes.Contains(v, maxDouble) {
		if err := checkNumbers(b); err != nil {
			return nil, err
		}
	}
	return v, nil
}

// maxDouble is math.MaxFloat64 as JCS writes it.
var maxDouble = strconv.AppendFloat(nil, math.MaxFloat64, 'g', -1, 64)

// checkNumbers reports a number of b beyond the range of a double.
func checkNumbers(b []byte) error {
	dec := jsontext.NewDecoder(bytes.NewReader(b))
	for {
		tok, err := dec.ReadToken()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if tok.Kind() != '0' {
			continue
		}
		if _, err := strconv.ParseFloat(tok.String(), 64); err != nil {
			return fmt.Errorf("number %s is out of range of an IEEE 754 double", tok.String())
		}
	}
}
