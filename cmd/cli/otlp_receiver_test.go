package cli_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/hex"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

// otlpReceiver is an in-process OTLP traces endpoint, as a collector
// serves it: OTLP/HTTP (POST /v1/traces, a protobuf
// ExportTraceServiceRequest, gzip or not) or OTLP/gRPC
// (TraceService/Export). It decodes every span it is sent.
type otlpReceiver struct {
	URL string // http://127.0.0.1:port: OTEL_EXPORTER_OTLP_ENDPOINT

	mu       sync.Mutex
	requests int
	spans    []receivedSpan
}

// receivedSpan is one exported span with its resource's attributes.
type receivedSpan struct {
	*tracepb.Span
	resource map[string]string
}

func (s receivedSpan) traceID() string  { return hex.EncodeToString(s.TraceId) }
func (s receivedSpan) spanID() string   { return hex.EncodeToString(s.SpanId) }
func (s receivedSpan) parentID() string { return hex.EncodeToString(s.ParentSpanId) }

// attr returns the span's attribute k as a string (ints in decimal), ""
// when absent.
func (s receivedSpan) attr(k string) string {
	for _, kv := range s.Attributes {
		if kv.Key == k {
			return anyString(kv.Value)
		}
	}
	return ""
}

func anyString(v *commonpb.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return strconv.FormatInt(x.IntValue, 10)
	case *commonpb.AnyValue_BoolValue:
		if x.BoolValue {
			return "true"
		}
		return "false"
	}
	return v.String()
}

// startOTLPHTTP starts an OTLP/HTTP receiver.
func startOTLPHTTP(t *testing.T) *otlpReceiver {
	t.Helper()
	r := &otlpReceiver{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method != http.MethodPost || req.URL.Path != "/v1/traces" {
			http.NotFound(w, req)
			return
		}
		if ct := req.Header.Get("Content-Type"); ct != "application/x-protobuf" {
			http.Error(w, "content type "+ct, http.StatusUnsupportedMediaType)
			return
		}
		var body io.Reader = req.Body
		if req.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(req.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			body = zr
		}
		b, err := io.ReadAll(body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var msg collectortrace.ExportTraceServiceRequest
		if err := proto.Unmarshal(b, &msg); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.add(&msg)
		out, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = io.Copy(w, bytes.NewReader(out))
	}))
	t.Cleanup(srv.Close)
	r.URL = srv.URL
	return r
}

// grpcTraceService is the receiver's OTLP/gRPC TraceService.
type grpcTraceService struct {
	collectortrace.UnimplementedTraceServiceServer
	r *otlpReceiver
}

func (s grpcTraceService) Export(_ context.Context, req *collectortrace.ExportTraceServiceRequest) (*collectortrace.ExportTraceServiceResponse, error) {
	s.r.add(req)
	return &collectortrace.ExportTraceServiceResponse{}, nil
}

// startOTLPGRPC starts an OTLP/gRPC receiver (plain text).
func startOTLPGRPC(t *testing.T) *otlpReceiver {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &otlpReceiver{URL: "http://" + ln.Addr().String()}
	srv := grpc.NewServer()
	collectortrace.RegisterTraceServiceServer(srv, grpcTraceService{r: r})
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln)
	}()
	t.Cleanup(func() {
		srv.Stop()
		<-done
	})
	return r
}

func (r *otlpReceiver) add(msg *collectortrace.ExportTraceServiceRequest) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.requests++
	for _, rs := range msg.ResourceSpans {
		res := map[string]string{}
		for _, kv := range rs.GetResource().GetAttributes() {
			res[kv.Key] = anyString(kv.Value)
		}
		for _, ss := range rs.ScopeSpans {
			for _, sp := range ss.Spans {
				r.spans = append(r.spans, receivedSpan{Span: sp, resource: res})
			}
		}
	}
}

// received returns the number of export requests and the spans so far.
func (r *otlpReceiver) received() (int, []receivedSpan) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.requests, append([]receivedSpan(nil), r.spans...)
}

// named returns the spans named name whose attributes have the values in
// kv (pairs of key, value).
func named(spans []receivedSpan, name string, kv ...string) []receivedSpan {
	var out []receivedSpan
next:
	for _, s := range spans {
		if s.Name != name {
			continue
		}
		for i := 0; i+1 < len(kv); i += 2 {
			if s.attr(kv[i]) != kv[i+1] {
				continue next
			}
		}
		out = append(out, s)
	}
	return out
}

// childrenOf returns the names of the spans whose parent is p.
func childrenOf(spans []receivedSpan, p receivedSpan) []string {
	var out []string
	for _, s := range spans {
		if s.traceID() == p.traceID() && s.parentID() == p.spanID() {
			out = append(out, s.Name)
		}
	}
	return out
}
