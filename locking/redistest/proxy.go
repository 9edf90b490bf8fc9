package redistest

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// ProxyMode is what a Proxy does with traffic.
type ProxyMode int

const (
	// Pass forwards bytes both ways, each chunk delayed by the latency.
	Pass ProxyMode = iota
	// Blackhole keeps every connection open and accepts new ones but
	// forwards nothing until the mode changes, like a route that silently
	// drops packets (TCP would deliver them late once it heals).
	Blackhole
	// Reject closes every connection with a reset and resets new ones at
	// once, like a host whose port is closed.
	Reject
	// LoseReplies forwards requests as Pass does but holds every answer
	// as Blackhole holds it: an asymmetric partition (a one-way route
	// failure, a NAT or conntrack table dropping the return traffic). The
	// server executes what it is sent while its client times out and
	// counts it as failed; the held answers arrive late, in order, once
	// the mode returns to Pass, if the client still listens.
	LoseReplies
)

func (m ProxyMode) String() string {
	switch m {
	case Pass:
		return "pass"
	case Blackhole:
		return "blackhole"
	case Reject:
		return "reject"
	case LoseReplies:
		return "lose-replies"
	}
	return fmt.Sprintf("ProxyMode(%d)", int(m))
}

// Proxy is a TCP proxy on a loopback port in front of one target address,
// with injectable latency and faults. Each connection has one goroutine per
// direction reading and one writing, so latency delays every chunk by the
// same amount without limiting throughput or reordering bytes.
//
// It is for tests: it guarantees byte order per direction and that a mode
// change applies to chunks not yet written; it does not model bandwidth or
// packet loss.
type Proxy struct {
	ln     net.Listener
	target string

	mu      sync.Mutex
	latency time.Duration
	mode    ProxyMode
	conns   map[*proxyConn]struct{}
	closed  bool
	wg      sync.WaitGroup
}

type proxyConn struct {
	client, server net.Conn
	once           sync.Once
	dead           chan struct{} // closed by close
}

func (c *proxyConn) close(reset bool) {
	c.once.Do(func() {
		close(c.dead)
		if reset {
			if tc, ok := c.client.(*net.TCPConn); ok {
				_ = tc.SetLinger(0)
			}
		}
		_ = c.client.Close()
		if c.server != nil {
			_ = c.server.Close()
		}
	})
}

// NewProxy listens on a free loopback port and forwards to target.
func NewProxy(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("redistest: proxy listen: %w", err)
	}
	p := &Proxy{ln: ln, target: target, conns: map[*proxyConn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the address clients connect to.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// SetLatency delays every chunk in each direction by d (a request/reply
// round trip gets 2d).
func (p *Proxy) SetLatency(d time.Duration) {
	p.mu.Lock()
	p.latency = d
	p.mu.Unlock()
}

// SetMode switches the proxy's behaviour. Reject resets every open
// connection now; Blackhole silences them; LoseReplies silences their
// server-to-client direction only; Pass resumes forwarding on the
// connections that are still open.
func (p *Proxy) SetMode(m ProxyMode) {
	p.mu.Lock()
	p.mode = m
	var victims []*proxyConn
	if m == Reject {
		for c := range p.conns {
			victims = append(victims, c)
		}
	}
	p.mu.Unlock()
	for _, c := range victims {
		c.close(true)
	}
}

// Cut closes every open connection (with a reset) once; new connections
// are served according to the mode.
func (p *Proxy) Cut() {
	p.mu.Lock()
	var victims []*proxyConn
	for c := range p.conns {
		victims = append(victims, c)
	}
	p.mu.Unlock()
	for _, c := range victims {
		c.close(true)
	}
}

func (p *Proxy) state() (time.Duration, ProxyMode) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.latency, p.mode
}

// Close stops listening, closes every connection and waits for the
// proxy's goroutines.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.closed = true
	var all []*proxyConn
	for c := range p.conns {
		all = append(all, c)
	}
	p.mu.Unlock()
	err := p.ln.Close()
	for _, c := range all {
		c.close(false)
	}
	p.wg.Wait()
	return err
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		cc, err := p.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			time.Sleep(10 * time.Millisecond)
			continue
		}
		_, mode := p.state()
		c := &proxyConn{client: cc, dead: make(chan struct{})}
		if mode == Reject {
			c.close(true)
			continue
		}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			c.close(false)
			return
		}
		p.conns[c] = struct{}{}
		p.wg.Add(1)
		p.mu.Unlock()
		go p.serve(c)
	}
}

func (p *Proxy) serve(c *proxyConn) {
	defer p.wg.Done()
	defer func() {
		c.close(false)
		p.mu.Lock()
		delete(p.conns, c)
		p.mu.Unlock()
	}()
	sc, err := net.DialTimeout("tcp", p.target, 2*time.Second)
	if err != nil {
		c.close(true)
		return
	}
	p.mu.Lock()
	c.server = sc
	closed := p.closed
	p.mu.Unlock()
	if closed {
		_ = sc.Close()
		return
	}
	done := make(chan struct{}, 2)
	go func() { p.pipe(c, sc, c.client, false); done <- struct{}{} }()
	go func() { p.pipe(c, c.client, sc, true); done <- struct{}{} }()
	<-done // one direction ended: end both
	c.close(false)
	<-done
}

type chunk struct {
	b  []byte
	at time.Time
}

// pipe copies src to dst, each chunk held until its arrival time plus the
// latency in force. In Blackhole mode chunks are read and held, not
// written, like segments TCP keeps retransmitting: when the mode returns
// to Pass they arrive late, in order. LoseReplies holds them so on the
// replies direction (server to client) only.
func (p *Proxy) pipe(c *proxyConn, dst, src net.Conn, replies bool) {
	q := make(chan chunk, 4096)
	wdone := make(chan struct{})
	go func() {
		defer close(wdone)
		drain := func() {
			for range q {
			}
		}
		for ch := range q {
			for {
				lat, mode := p.state()
				if mode == Reject {
					c.close(true)
				}
				select {
				case <-c.dead:
					drain()
					return
				default:
				}
				d := time.Until(ch.at.Add(lat))
				held := mode == Blackhole || (mode == LoseReplies && replies)
				if !held && d <= 0 {
					break
				}
				if held || d > 10*time.Millisecond {
					d = 10 * time.Millisecond
				}
				time.Sleep(d)
			}
			if _, err := dst.Write(ch.b); err != nil {
				c.close(false)
				drain()
				return
			}
		}
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			q <- chunk{b: append([]byte(nil), buf[:n]...), at: time.Now()}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				c.close(false)
			}
			break
		}
	}
	close(q)
	<-wdone
	if tc, ok := dst.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
	}
}
