package entraauth

import (
	"context"
	"time"
)

// expiredRetryMax bounds the backoff once the held token has expired.
const expiredRetryMax = 5 * time.Second

// loop refreshes the token until ctx ends. After a failed fetch, or one that
// returned the token already held, it retries with exponential backoff
// (Options.RetryMin doubling up to RetryMax), and keeps retrying after the
// token expired: the next token that arrives is published at once.
func (p *Provider) loop(ctx context.Context) {
	defer close(p.done)
	var backoff time.Duration
	for {
		now := p.opt.Clock.Now()
		due := p.nextRefresh()
		if backoff > 0 {
			due = now.Add(backoff)
			// A wait armed while the token is valid ends at its expiry at
			// the latest: from then on retries come every expiredRetryMax.
			if exp := p.expiry(); now.Before(exp) && due.After(exp) {
				due = exp
			}
		}
		t := p.opt.Clock.NewTimer(max(0, due.Sub(now)))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
		c, changed, err := p.fetch(ctx)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			backoff = p.grow(backoff)
			level := "warn"
			if !p.valid() {
				// Connections are on an expired token now: no new one can
				// authenticate until a refresh succeeds, so retry often.
				level = "error"
				backoff = min(backoff, expiredRetryMax)
			}
			p.log(level, "entraauth: token refresh failed", "error", err, "retry_in", backoff.String(),
				"expires", p.expiry().UTC().Format(time.RFC3339))
		case !changed:
			// The source's cache handed back the token we hold; ask again soon.
			backoff = p.grow(backoff)
			p.opt.Logger.Debug("entraauth: token unchanged, retrying", "username", c.username,
				"retry_in", backoff.String())
		default:
			backoff = 0
		}
	}
}

// nextRefresh is when the held token should be replaced: at its RefreshOn
// hint when it has one, else after RefreshRatio of its lifetime; in any case
// no later than min(Lead, the rest of the lifetime after RefreshRatio)
// before expiry.
func (p *Provider) nextRefresh() time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	life := p.exp.Sub(p.received)
	due := p.received.Add(time.Duration(float64(life) * p.opt.RefreshRatio))
	if !p.refreshOn.IsZero() && p.refreshOn.Before(p.exp) {
		due = p.refreshOn
	}
	lead := min(p.opt.Lead, time.Duration(float64(life)*(1-p.opt.RefreshRatio)))
	if latest := p.exp.Add(-lead); due.After(latest) {
		due = latest
	}
	return due
}

func (p *Provider) grow(b time.Duration) time.Duration {
	if b == 0 {
		return p.opt.RetryMin
	}
	return min(2*b, p.opt.RetryMax)
}

func (p *Provider) expiry() time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exp
}

func (p *Provider) log(level, msg string, args ...any) {
	if level == "error" {
		p.opt.Logger.Error(msg, args...)
		return
	}
	p.opt.Logger.Warn(msg, args...)
}
