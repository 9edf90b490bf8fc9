package entraauth

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeIdentityEndpoint plays the managed identity endpoint that Container
// Apps (like App Service) announces in IDENTITY_ENDPOINT/IDENTITY_HEADER.
type fakeIdentityEndpoint struct {
	mu       sync.Mutex
	requests []*http.Request
	status   int
	token    string
}

func (f *fakeIdentityEndpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.requests = append(f.requests, r)
	status, token := f.status, f.token
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if status != http.StatusOK {
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(map[string]string{"error": "invalid_request", "error_description": "identity not found"})
		return
	}
	_ = json.NewEncoder(w).Encode(map[string]string{
		"access_token": token,
		"expires_on":   strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10),
		"resource":     r.URL.Query().Get("resource"),
		"token_type":   "Bearer",
		"client_id":    r.URL.Query().Get("client_id"),
	})
}

func identityEndpoint(t *testing.T, f *fakeIdentityEndpoint) {
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	t.Setenv("IDENTITY_ENDPOINT", srv.URL+"/msi/token")
	t.Setenv("IDENTITY_HEADER", "header-secret")
	for _, v := range []string{"IDENTITY_SERVER_THUMBPRINT", "MSI_ENDPOINT", "MSI_SECRET", "IMDS_ENDPOINT"} {
		t.Setenv(v, "")
	}
}

// The production path: azidentity's ManagedIdentityCredential with the
// user-assigned identity's client id asks the identity endpoint for the
// Redis resource, and the provider turns the answer into oid/token.
func TestNewManagedIdentityAsksTheIdentityEndpointForRedis(t *testing.T) {
	f := &fakeIdentityEndpoint{status: http.StatusOK, token: jwt(t, testOID, "mi")}
	identityEndpoint(t, f)
	p, err := NewManagedIdentity(t.Context(), "11111111-2222-3333-4444-555555555555", Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	user, pw, err := p.Credentials(t.Context())
	if err != nil || user != testOID || pw != f.token {
		t.Fatalf("Credentials = %q, %v; want the oid and the endpoint's token", user, err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.requests) != 1 {
		t.Fatalf("%d requests to the identity endpoint, want 1", len(f.requests))
	}
	r := f.requests[0]
	q := r.URL.Query()
	for k, want := range map[string]string{
		"resource":  "https://redis.azure.com", // the scope without /.default
		"client_id": "11111111-2222-3333-4444-555555555555",
	} {
		if got := q.Get(k); got != want {
			t.Errorf("query %s = %q, want %q (request %s)", k, got, want, r.URL)
		}
	}
	if got := r.Header.Get("X-IDENTITY-HEADER"); got != "header-secret" {
		t.Errorf("X-IDENTITY-HEADER = %q", got)
	}
}

// A replica whose identity is missing or not assigned fails at start, with
// the endpoint's answer in the error.
func TestNewManagedIdentityFailsWithoutAnIdentity(t *testing.T) {
	f := &fakeIdentityEndpoint{status: http.StatusBadRequest}
	identityEndpoint(t, f)
	p, err := NewManagedIdentity(t.Context(), "", Options{Logger: quiet})
	if err == nil {
		p.Close()
		t.Fatal("NewManagedIdentity succeeded without a token")
	}
	if !strings.Contains(err.Error(), "entraauth:") || !strings.Contains(err.Error(), "identity not found") {
		t.Fatalf("error does not say what failed: %v", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.requests) == 0 || f.requests[0].URL.Query().Has("client_id") {
		t.Fatal("the system-assigned identity was not asked for (empty client id)")
	}
}
