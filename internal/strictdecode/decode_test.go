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

func TestNumbers(t *testing.T) {
	var got struct {
		U   uint64  `yaml:"u"`
		U8  uint8   `yaml:"u8"`
		I8  int8    `yaml:"i8"`
		F32 float32 `yaml:"f32"`
		F   float64 `yaml:"f"`
	}
	require.NoError(t, Decoder{}.Decode(map[string]any{"u": uint64(1) << 63, "u8": "7", "i8": -8, "f32": 1.5, "f": 2}, &got))
	require.Equal(t, uint64(1)<<63, got.U)
	require.Equal(t, uint8(7), got.U8)
	require.Equal(t, int8(-8), got.I8)
	require.Equal(t, float32(1.5), got.F32)
	require.Equal(t, 2.0, got.F)

	err := Decoder{}.Decode(map[string]any{"u8": -1, "i8": 200, "f32": 1e300, "f": "x", "u": true}, &got)
	for _, want := range []string{"u8: -1 out of range for uint8", "i8: 200 out of range for int8",
		"f32: 1e+300 out of range for float32", `f: expected a number, got string "x"`, "u: expected an integer, got boolean true"} {
		require.ErrorContains(t, err, want)
	}
}
