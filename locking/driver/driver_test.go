package driver_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/slotlock/slotlock/locking/driver"
)

// TestDriverHasFewMethods keeps a driver small to write: a lease's steps
// and the driver's own upkeep, with the store's reads and writes in
// their own interface (Store), embedded.
func TestDriverHasFewMethods(t *testing.T) {
	const most = 8
	d := reflect.TypeFor[driver.Driver]()
	s := reflect.TypeFor[driver.Store]()
	own := 0
	for i := range d.NumMethod() {
		if _, inStore := s.MethodByName(d.Method(i).Name); !inStore {
			own++
		}
	}
	if own > most {
		t.Errorf("driver.Driver has %d methods besides Store's, at most %d", own, most)
	}
	if !d.Implements(s) {
		t.Error("driver.Driver does not embed Store")
	}
}

// TestCheckKeyFamilyBytes holds CheckKey's family rule to its definition:
// a family is refused exactly when it holds a brace or white space.
func TestCheckKeyFamilyBytes(t *testing.T) {
	for b := range 256 {
		f := "job" + string([]byte{byte(b)}) + "x"
		bad := strings.ContainsAny(f, "{} \t\r\n")
		if err := driver.CheckKey(driver.Key{Family: f, Name: "slot"}); (err != nil) != bad {
			t.Errorf("family %q: CheckKey error %v, want refused %v", f, err, bad)
		}
	}
}
