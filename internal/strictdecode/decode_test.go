package strictdecode

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

type target struct {
	Password string        `yaml:"password"`
	URL      string        `yaml:"url"`
	Wait     time.Duration `yaml:"wait"`
	Inner    struct {
		Name string `yaml:"name"`
	} `yaml:"inner"`
}

// The zero Decoder shows values; Secret and Mask keep credentials out of
// the errors.
func TestDecoderSecretAndMask(t *testing.T) {
	in := map[string]any{"password": 1234, "url": 5, "wait": "soon"}
	var got target
	err := Decoder{}.Decode(in, &got)
	require.ErrorContains(t, err, "password: expected a string, got integer 1234")

	dc := Decoder{
		Secret: func(k string) bool { return k == "password" },
		Mask:   func(v string) string { return strings.ReplaceAll(v, "soon", "***") },
	}
	err = dc.Decode(in, &got)
	require.ErrorContains(t, err, "password: expected a string, got an integer")
	require.NotContains(t, err.Error(), "1234")
	require.ErrorContains(t, err, `wait: invalid duration "***"`)
	require.Equal(t, `string "***"`, dc.Describe("soon"))
}

func TestUnknownKeyNamesItsPath(t *testing.T) {
	var got target
	err := Decoder{}.Decode(map[string]any{"inner": map[string]any{"nmae": "x"}}, &got)
	require.ErrorIs(t, err, ErrUnknownKey)
	var fe *FieldError
	require.ErrorAs(t, err, &fe)
	require.Equal(t, "inner.nmae", fe.Path)
	var uk *UnknownKeyError
	require.True(t, errors.As(err, &uk))
	require.Equal(t, `unknown key (did you mean "name"?)`, uk.Error())
	require.Equal(t, `unknown key inner.nmae (did you mean "name"?)`, uk.At(fe.Path))
	require.Equal(t, "inner.nmae", JoinKey("inner", "nmae"))
	require.Equal(t, "inner", JoinKey("", "inner"))
}

func TestNormalize(t *testing.T) {
	got := Normalize(map[any]any{"a": []any{map[any]any{1: "x"}}})
	require.Equal(t, map[string]any{"a": []any{map[string]any{"1": "x"}}}, got)
}
