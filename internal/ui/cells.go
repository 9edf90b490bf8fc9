package ui

import (
	"html/template"
	"strings"
)

// The timeline's cells are written here, not by the template: a week
// window has 10,000 of them, and html/template's per-action escaping (with
// its reflection) made them cost ~60 ms and 480k allocations a page, on
// the CPU the scheduler shares. Each cell is the markup the template had,
//
//	<a class="c CLASS[ sel]" href="HREF" title="TITLE" data-slot="SLOT" data-state="STATE"[ data-reason="REASON"]></a>
//
// with every value escaped as html/template escapes a quoted attribute's
// value (attrEscaper below, byte for byte: TestCellsAsTheTemplateWrote).
// No value can start a URL scheme in href: each is "?" and a query the page
// built with url.Values.

// attrEscaper is html/template's escaping of a value in a quoted attribute
// (its htmlReplacementTable): NUL, quotes, &, +, < and >.
var attrEscaper = strings.NewReplacer("\x00", "\uFFFD", `"`, "&#34;", "'", "&#39;", "&", "&amp;", "+", "&#43;",
	"<", "&lt;", ">", "&gt;")

// CellsHTML is the timeline's cells, escaped.
func (tv *timelineView) CellsHTML() template.HTML {
	var b strings.Builder
	b.Grow(len(tv.Cells) * 200)
	for i := range tv.Cells {
		c := &tv.Cells[i]
		b.WriteString(`<a class="c `)
		_, _ = attrEscaper.WriteString(&b, c.Class)
		if c.Selected {
			b.WriteString(" sel")
		}
		b.WriteString(`" href="`)
		_, _ = attrEscaper.WriteString(&b, c.Href)
		b.WriteString(`" title="`)
		_, _ = attrEscaper.WriteString(&b, c.Title)
		b.WriteString(`" data-slot="`)
		_, _ = attrEscaper.WriteString(&b, c.Slot)
		b.WriteString(`" data-state="`)
		_, _ = attrEscaper.WriteString(&b, c.State)
		b.WriteByte('"')
		if c.Reason != "" {
			b.WriteString(` data-reason="`)
			_, _ = attrEscaper.WriteString(&b, c.Reason)
			b.WriteByte('"')
		}
		b.WriteString("></a>")
	}
	return template.HTML(b.String()) // every value escaped above, as the template would
}
