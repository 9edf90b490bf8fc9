package wire

import "testing"

// The slot of a hash tag is Redis Cluster's (its documented examples),
// and a key's hash tag is as Redis Cluster reads it.
func TestTagSlot(t *testing.T) {
	for tag, want := range map[string]int{"123456789": 0x31C3 & 16383, "foo": 12182, "bar": 5061} {
		if got := TagSlot(tag); got != want {
			t.Errorf("TagSlot(%q) = %d, want %d", tag, got, want)
		}
	}
	for key, want := range map[string]string{
		"{user1000}.following": "user1000",
		"foo{}{bar}":           "foo{}{bar}",
		"foo{{bar}}zap":        "{bar",
		"foo{bar}{zap}":        "bar",
		"plain":                "plain",
	} {
		if got := HashTag(key); got != want {
			t.Errorf("HashTag(%q) = %q, want %q", key, got, want)
		}
	}
}
