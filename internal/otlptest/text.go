package otlptest

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
)

// ValueString renders an attribute value of any type as text.
func ValueString(v *commonpb.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_BoolValue:
		return strconv.FormatBool(x.BoolValue)
	case *commonpb.AnyValue_IntValue:
		return strconv.FormatInt(x.IntValue, 10)
	case *commonpb.AnyValue_DoubleValue:
		return strconv.FormatFloat(x.DoubleValue, 'g', -1, 64)
	case *commonpb.AnyValue_BytesValue:
		return string(x.BytesValue)
	case *commonpb.AnyValue_ArrayValue:
		parts := make([]string, 0, len(x.ArrayValue.GetValues()))
		for _, e := range x.ArrayValue.GetValues() {
			parts = append(parts, ValueString(e))
		}
		return "[" + strings.Join(parts, ",") + "]"
	case *commonpb.AnyValue_KvlistValue:
		parts := make([]string, 0, len(x.KvlistValue.GetValues()))
		for _, kv := range x.KvlistValue.GetValues() {
			parts = append(parts, kv.GetKey()+"="+ValueString(kv.GetValue()))
		}
		return "{" + strings.Join(parts, ",") + "}"
	default:
		return ""
	}
}

// Texts lists every string the span carries, as "where: text" lines: its
// name, status message, trace state, attribute keys and values, its events
// and links with theirs, and its resource's and scope's attributes; a test
// that no secret leaves the process looks through them.
func (s Span) Texts() []string {
	var out []string
	add := func(where string, kvs []*commonpb.KeyValue) {
		for _, kv := range kvs {
			out = append(out, where+" attribute key: "+kv.GetKey(), where+" attribute "+kv.GetKey()+": "+ValueString(kv.GetValue()))
		}
	}
	out = append(out, "name: "+s.GetName(), "status message: "+s.GetStatus().GetMessage(), "trace state: "+s.GetTraceState())
	add("span", s.GetAttributes())
	for _, e := range s.GetEvents() {
		out = append(out, "event name: "+e.GetName())
		add("event "+e.GetName(), e.GetAttributes())
	}
	for _, l := range s.GetLinks() {
		out = append(out, "link trace state: "+l.GetTraceState())
		add("link", l.GetAttributes())
	}
	add("resource", s.Resource.GetAttributes())
	add("scope", s.Scope.GetAttributes())
	return out
}

// Describe is a readable listing of spans, one a line, for failure
// messages.
func Describe(spans []Span) string {
	if len(spans) == 0 {
		return "  (no spans)"
	}
	lines := make([]string, 0, len(spans))
	for _, s := range spans {
		attrs := make([]string, 0, len(s.GetAttributes()))
		for _, kv := range s.GetAttributes() {
			attrs = append(attrs, kv.GetKey()+"="+ValueString(kv.GetValue()))
		}
		sort.Strings(attrs)
		lines = append(lines, fmt.Sprintf("  %s trace=%s span=%s parent=%s kind=%v status=%v scope=%s links=%d attrs=[%s]",
			s.GetName(), s.TraceID(), s.SpanID(), s.ParentSpanID(), s.GetKind(), s.GetStatus().GetCode(),
			s.Scope.GetName(), len(s.GetLinks()), strings.Join(attrs, " ")))
	}
	return strings.Join(lines, "\n")
}
