package entraauth

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/redis/go-redis/v9/auth"

	"github.com/slotlock/slotlock/locking"
)

// Scope is the OAuth scope of Azure Cache for Redis and Azure Managed Redis.
const Scope = "https://redis.azure.com/.default"

// ErrClosed is returned by Subscribe and Credentials after Close.
var ErrClosed = errors.New("entraauth: provider closed")

// TokenSource hands out access tokens. It has the shape of
// azcore.TokenCredential, so every azidentity credential is one (production
// uses azidentity.ManagedIdentityCredential, see NewManagedIdentity).
// It must be safe for concurrent use.
type TokenSource interface {
	GetToken(ctx context.Context, opts policy.TokenRequestOptions) (azcore.AccessToken, error)
}

// Options tunes a Provider. The zero value is the production setting.
type Options struct {
	// Scope requested from the TokenSource. Default: Scope.
	Scope string
	// Username overrides the token's oid claim as the Redis username. Leave
	// empty for Azure Managed Redis (the oid is what its access policy
	// assignment names).
	Username string
	// RefreshRatio is the fraction of a token's lifetime after which a new
	// token is requested when the token carries no RefreshOn hint.
	// Default 0.7. Must be in (0, 1).
	RefreshRatio float64
	// Lead is the least time before expiry at which a refresh is planned.
	// Default 5m (azidentity's cache hands out a new token from 5 minutes
	// before expiry on).
	Lead time.Duration
	// RetryMin and RetryMax bound the exponential backoff between attempts
	// after a failed fetch, or after a fetch that returned the token already
	// held (a credential's cache may do that until its own refresh point).
	// Defaults 1s and 1m.
	RetryMin, RetryMax time.Duration
	// FetchTimeout bounds one GetToken call. Default 30s.
	FetchTimeout time.Duration
	// Clock drives the refresh timer. Default locking.SystemClock(0).
	Clock locking.Clock
	// Logger receives refreshes (debug) and failures (warn, error).
	// Default slog.Default().
	Logger *slog.Logger
}

func (o *Options) defaults() error {
	if o.Scope == "" {
		o.Scope = Scope
	}
	if o.RefreshRatio == 0 {
		o.RefreshRatio = 0.7
	}
	if o.RefreshRatio <= 0 || o.RefreshRatio >= 1 {
		return fmt.Errorf("entraauth: refresh ratio %v not in (0, 1)", o.RefreshRatio)
	}
	if o.Lead == 0 {
		o.Lead = 5 * time.Minute
	}
	if o.RetryMin <= 0 {
		o.RetryMin = time.Second
	}
	if o.RetryMax < o.RetryMin {
		o.RetryMax = max(time.Minute, o.RetryMin)
	}
	if o.FetchTimeout <= 0 {
		o.FetchTimeout = 30 * time.Second
	}
	if o.Clock == nil {
		o.Clock = locking.SystemClock(0)
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return nil
}

// Provider publishes Entra ID credentials to Redis connections. It
// implements auth.StreamingCredentialsProvider; Credentials has the shape of
// redlock.Config.CredentialsProvider for clients that only
// authenticate new connections. A Provider is safe for concurrent use.
type Provider struct {
	src  TokenSource
	opt  Options
	stop context.CancelFunc
	done chan struct{}

	mu        sync.Mutex
	cur       credentials // zero until the first token
	exp       time.Time   // cur's expiry
	received  time.Time   // when cur arrived
	refreshOn time.Time   // cur's RefreshOn hint, zero when none
	lastErr   error       // of the last fetch, nil after a success
	listeners map[auth.CredentialsListener]struct{}
	closed    bool
}

var _ auth.StreamingCredentialsProvider = (*Provider)(nil)

// New fetches the first token (so a misconfigured identity fails at start)
// and starts the refresh loop. Close stops it.
func New(ctx context.Context, src TokenSource, opt Options) (*Provider, error) {
	if src == nil {
		return nil, errors.New("entraauth: nil token source")
	}
	if err := opt.defaults(); err != nil {
		return nil, err
	}
	p := &Provider{src: src, opt: opt, done: make(chan struct{}),
		listeners: map[auth.CredentialsListener]struct{}{}}
	if _, _, err := p.fetch(ctx); err != nil {
		return nil, err
	}
	loopCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	p.stop = stop
	go p.loop(loopCtx)
	return p, nil
}

// Close stops the refresh loop and drops every subscription. Connections
// keep the credentials they have.
func (p *Provider) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	clear(p.listeners)
	p.mu.Unlock()
	p.stop()
	<-p.done
	return nil
}

// Subscribe registers listener for credential updates and returns the
// current credentials. Subscribing the same listener again is a no-op; every
// returned UnsubscribeFunc removes the listener and is safe to call twice.
// It never blocks on the token source (go-redis calls it while dialing, under
// a command's short deadline): when the held token has expired because every
// refresh failed, it fails at once with the last refresh error, and the
// refresh loop keeps trying.
func (p *Provider) Subscribe(listener auth.CredentialsListener) (auth.Credentials, auth.UnsubscribeFunc, error) {
	if listener == nil {
		return nil, nil, errors.New("entraauth: nil listener")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	c, err := p.validLocked()
	if err != nil {
		return nil, nil, err
	}
	p.listeners[listener] = struct{}{}
	unsubscribe := func() error {
		p.mu.Lock()
		delete(p.listeners, listener)
		p.mu.Unlock()
		return nil
	}
	return c, unsubscribe, nil
}

// Credentials returns the current username and token, or the last refresh
// error when the held token has expired. It matches
// redlock.Config.CredentialsProvider, which authenticates new
// connections only (no re-authentication of open ones).
func (p *Provider) Credentials(context.Context) (username, password string, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	c, err := p.validLocked()
	if err != nil {
		return "", "", err
	}
	u, pw := c.BasicAuth()
	return u, pw, nil
}

// listenerCount reports the live subscriptions (for tests and metrics).
func (p *Provider) listenerCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.listeners)
}

// validLocked returns the held credentials while they are unexpired. The
// caller holds mu.
func (p *Provider) validLocked() (credentials, error) {
	switch {
	case p.closed:
		return credentials{}, ErrClosed
	case p.opt.Clock.Now().Before(p.exp):
		return p.cur, nil
	case p.lastErr != nil:
		return credentials{}, fmt.Errorf("entraauth: token expired at %s and refreshing failed: %w",
			p.exp.UTC().Format(time.RFC3339), p.lastErr)
	default:
		return credentials{}, fmt.Errorf("entraauth: token expired at %s; refreshing", p.exp.UTC().Format(time.RFC3339))
	}
}

// valid reports whether the held token is unexpired.
func (p *Provider) valid() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, err := p.validLocked()
	return err == nil
}

// fetch asks the source for a token. When it differs from the held one it is
// stored and published to every listener, and changed is true. Only New and
// the refresh loop call it, one after the other.
func (p *Provider) fetch(ctx context.Context) (c credentials, changed bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, p.opt.FetchTimeout)
	defer cancel()
	defer func() {
		p.mu.Lock()
		p.lastErr = err
		p.mu.Unlock()
	}()
	tok, err := p.src.GetToken(ctx, policy.TokenRequestOptions{Scopes: []string{p.opt.Scope}})
	if err != nil {
		return credentials{}, false, fmt.Errorf("entraauth: get token for %s: %w", p.opt.Scope, err)
	}
	now := p.opt.Clock.Now()
	if tok.Token == "" {
		return credentials{}, false, errors.New("entraauth: token source returned an empty token")
	}
	if !tok.ExpiresOn.After(now) {
		return credentials{}, false, fmt.Errorf("entraauth: token source returned a token that expired at %s",
			tok.ExpiresOn.UTC().Format(time.RFC3339))
	}
	user := p.opt.Username
	if user == "" {
		if user, err = ObjectID(tok.Token); err != nil {
			return credentials{}, false, err
		}
	}
	c = credentials{username: user, password: tok.Token}

	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return credentials{}, false, ErrClosed
	}
	changed = c != p.cur
	var ls []auth.CredentialsListener
	if changed {
		p.cur, p.exp = c, tok.ExpiresOn
		p.received, p.refreshOn = now, tok.RefreshOn
		ls = make([]auth.CredentialsListener, 0, len(p.listeners))
		for l := range p.listeners {
			ls = append(ls, l)
		}
	}
	p.mu.Unlock()
	if changed {
		p.opt.Logger.Debug("entraauth: new Redis token", "username", user,
			"expires", tok.ExpiresOn.UTC().Format(time.RFC3339), "connections", len(ls))
		for _, l := range ls {
			l.OnNext(c) // go-redis only marks the connection for re-AUTH here; it does not block
		}
	}
	return c, changed, nil
}
