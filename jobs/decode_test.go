package jobs

import (
	"errors"
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"
)

type decodeInner struct {
	Policy   string        `yaml:"policy"`
	Deadline time.Duration `yaml:"deadline"`
}

type decodeBase struct {
	Shared string `yaml:"shared"`
}

type decodeTarget struct {
	decodeBase
	Name     string            `yaml:"name"`
	Count    int               `yaml:"count"`
	Small    uint8             `yaml:"small"`
	Ratio    float64           `yaml:"ratio"`
	On       bool              `yaml:"on"`
	Tags     []string          `yaml:"tags"`
	Env      map[string]string `yaml:"env"`
	Inner    decodeInner       `yaml:"inner"`
	Ptr      *decodeInner      `yaml:"ptr"`
	Any      any               `yaml:"any"`
	Addr     netip.Addr        `yaml:"addr"`
	Untagged string
	Skipped  string `yaml:"-"`
}

func TestDecodeParamsHappyPath(t *testing.T) {
	in := map[string]any{
		"shared":   "s",
		"name":     "n",
		"count":    7,
		"small":    "200", // strings parse, as environment overrides produce
		"ratio":    1,
		"on":       "true",
		"tags":     []any{"a", "b c"},
		"env":      map[string]any{"K": "v"},
		"inner":    map[string]any{"policy": "skip", "deadline": "10m"},
		"ptr":      map[any]any{"deadline": "1.5s"},
		"any":      map[any]any{"x": []any{1, "two"}},
		"addr":     "10.0.0.1",
		"untagged": "u",
	}
	got := decodeTarget{Inner: decodeInner{Policy: "default"}}
	if err := DecodeParams(in, &got); err != nil {
		t.Fatal(err)
	}
	want := decodeTarget{
		decodeBase: decodeBase{Shared: "s"},
		Name:       "n", Count: 7, Small: 200, Ratio: 1, On: true,
		Tags:     []string{"a", "b c"},
		Env:      map[string]string{"K": "v"},
		Inner:    decodeInner{Policy: "skip", Deadline: 10 * time.Minute},
		Ptr:      &decodeInner{Deadline: 1500 * time.Millisecond},
		Any:      map[string]any{"x": []any{1, "two"}},
		Addr:     netip.MustParseAddr("10.0.0.1"),
		Untagged: "u",
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("decoded\n%#v\nwant\n%#v", got, want)
	}
}

func TestDecodeParamsNullKeepsDefault(t *testing.T) {
	got := decodeInner{Policy: "skip", Deadline: time.Minute}
	if err := DecodeParams(map[string]any{"policy": nil, "deadline": nil}, &got); err != nil {
		t.Fatal(err)
	}
	if got.Policy != "skip" || got.Deadline != time.Minute {
		t.Fatalf("null overwrote defaults: %+v", got)
	}
	if err := DecodeParams(nil, &got); err != nil {
		t.Fatal(err)
	}
}

func TestDecodeParamsErrors(t *testing.T) {
	cases := []struct {
		name string
		in   map[string]any
		want []string // one substring per expected error, in path order
	}{
		{"unknown key with suggestion", map[string]any{"nmae": "x"}, []string{`nmae: unknown key (did you mean "name"?)`}},
		{"unknown key far from any", map[string]any{"zzzzzz": 1}, []string{`zzzzzz: unknown key`}},
		{"unknown nested key", map[string]any{"inner": map[string]any{"polcy": "skip"}}, []string{`inner.polcy: unknown key (did you mean "policy"?)`}},
		{"case matters", map[string]any{"Name": "x"}, []string{`Name: unknown key (did you mean "name"?)`}},
		{"skipped field is unknown", map[string]any{"skipped": "x"}, []string{`skipped: unknown key`}},
		{"string for list", map[string]any{"tags": "a b"}, []string{`tags: expected a list, got string "a b"`}},
		{"list for string", map[string]any{"name": []any{"a"}}, []string{`name: expected a string, got a list`}},
		{"number for string", map[string]any{"name": 12}, []string{`name: expected a string, got integer 12`}},
		{"bad bool", map[string]any{"on": "yes please"}, []string{`on: expected true or false`}},
		{"fractional int", map[string]any{"count": 1.5}, []string{`count: expected an integer, got number 1.5`}},
		{"overflow", map[string]any{"small": 300}, []string{`small: 300 out of range for uint8`}},
		{"negative unsigned", map[string]any{"small": -1}, []string{`small: -1 out of range`}},
		{"bare number duration", map[string]any{"inner": map[string]any{"deadline": 30}}, []string{`inner.deadline: expected a duration such as "30s", got integer 30`}},
		{"bad duration", map[string]any{"inner": map[string]any{"deadline": "5"}}, []string{`inner.deadline: invalid duration "5"`}},
		{"bad list element", map[string]any{"tags": []any{"ok", 3}}, []string{`tags[1]: expected a string, got integer 3`}},
		{"bad map value", map[string]any{"env": map[string]any{"A": true}}, []string{`env.A: expected a string, got boolean true`}},
		{"map for struct", map[string]any{"inner": "skip"}, []string{`inner: expected a map, got string "skip"`}},
		{"text unmarshaler", map[string]any{"addr": "not-an-ip"}, []string{`addr: invalid value "not-an-ip"`}},
		{"every error at once", map[string]any{"nmae": 1, "count": "x", "inner": map[string]any{"deadline": 1, "extra": 2}}, []string{
			`count: expected an integer`, `inner.deadline: expected a duration`, `inner.extra: unknown key`, `nmae: unknown key`,
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got decodeTarget
			err := DecodeParams(tc.in, &got)
			if err == nil {
				t.Fatal("no error")
			}
			joined, ok := err.(interface{ Unwrap() []error })
			if !ok {
				t.Fatalf("error %T is not a joined list", err)
			}
			errs := joined.Unwrap()
			if len(errs) != len(tc.want) {
				t.Fatalf("got %d errors, want %d:\n%v", len(errs), len(tc.want), err)
			}
			for i, e := range errs {
				var fe *FieldError
				if !errors.As(e, &fe) {
					t.Fatalf("error %d is %T, want *FieldError", i, e)
				}
				if !strings.Contains(e.Error(), tc.want[i]) {
					t.Errorf("error %d = %q, want it to contain %q", i, e, tc.want[i])
				}
			}
		})
	}
}

func TestDecodeParamsUnknownKeyIsMatchable(t *testing.T) {
	var got decodeInner
	err := DecodeParams(map[string]any{"nope": 1}, &got)
	if !errors.Is(err, ErrUnknownKey) {
		t.Fatalf("errors.Is(err, ErrUnknownKey) = false for %v", err)
	}
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Path != "nope" {
		t.Fatalf("FieldError path: %+v", fe)
	}
}

func TestDecodeParamsBadTarget(t *testing.T) {
	var s decodeInner
	if err := DecodeParams(map[string]any{}, s); err == nil {
		t.Fatal("non-pointer target accepted")
	}
	if err := DecodeParams(map[string]any{}, (*decodeInner)(nil)); err == nil {
		t.Fatal("nil pointer target accepted")
	}
}

func TestTailBuffer(t *testing.T) {
	tb := newTailBuffer(8)
	for _, s := range []string{"abc", "defgh", "ij", "klmnopqrstu", "v"} {
		tb.Write([]byte(s))
	}
	if got := string(tb.Bytes()); got != "opqrstuv" {
		t.Fatalf("tail = %q, want opqrstuv", got)
	}
	if tb.Total() != 22 {
		t.Fatalf("total = %d", tb.Total())
	}
	tb = newTailBuffer(4)
	tb.Write([]byte("aé€")) // 1 + 2 + 3 bytes; the tail "\xa9€" starts mid-rune
	if got := tb.String(); got != "€" {
		t.Fatalf("String() = %q, want the partial rune dropped", got)
	}
}

func TestLooksSecret(t *testing.T) {
	for _, n := range []string{"Authorization", "proxy-authorization", "COOKIE", "X-Api-Key", "x-access-token", "Token",
		"client_secret", "password", "db_password", "api_key", "apikey", "key", "private_key", "X-Amz-Signature", "access.key"} {
		if !LooksSecret(n) {
			t.Errorf("LooksSecret(%q) = false", n)
		}
	}
	for _, n := range []string{"Content-Type", "Accept", "X-Request-Id", "monkey", "keyboard", "message", "url"} {
		if LooksSecret(n) {
			t.Errorf("LooksSecret(%q) = true", n)
		}
	}
	in := map[string]any{"headers": map[string]any{"Authorization": "Bearer x", "Accept": "a"}, "token": "t", "list": []any{map[string]any{"password": "p"}}}
	got := RedactMap(in)
	want := map[string]any{"headers": map[string]any{"Authorization": "***", "Accept": "a"}, "token": "***", "list": []any{map[string]any{"password": "***"}}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("RedactMap = %v", got)
	}
	if in["token"] != "t" {
		t.Fatal("RedactMap modified its input")
	}
}

// A mistyped value under a credential-looking key must not appear in the
// error: the error goes to stderr and into logs.
func TestDecodeParamsErrorsHideSecretValues(t *testing.T) {
	var got struct {
		Password string            `yaml:"password"`
		Headers  map[string]string `yaml:"headers"`
		Tokens   []string          `yaml:"tokens"`
		Count    int               `yaml:"count"`
	}
	err := DecodeParams(map[string]any{
		"password": 12345678,
		"headers":  map[string]any{"Authorization": 987654321, "X-Plain": 4242},
		"tokens":   []any{"ok", 55555},
		"count":    "77777x",
	}, &got)
	if err == nil {
		t.Fatal("want errors")
	}
	msg := err.Error()
	for _, secret := range []string{"12345678", "987654321", "55555"} {
		if strings.Contains(msg, secret) {
			t.Errorf("error shows the secret %s:\n%s", secret, msg)
		}
	}
	// Values under ordinary keys are still shown, and the type is named.
	for _, want := range []string{"4242", "77777x", "password: expected a string, got an integer"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q:\n%s", want, msg)
		}
	}
}
