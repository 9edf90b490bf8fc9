package ui

// The timeline's cells: a week window has 10,000 of them, so they are
// written in one loop with no allocation of their own. Each is
//
//	<a class="c CLASS[ sel]" href="HREF" title="TITLE" data-slot="SLOT" data-state="STATE"[ data-reason="REASON"]></a>
//
// with the href escaped as a URL and every other value as a quoted
// attribute's (TestCellsAsTheTemplateWrote compares them with
// html/template's, byte for byte).

// cells writes the timeline's cells.
func (w *pageWriter) cells(cells []cellView) {
	w.Grow(len(cells) * 200)
	for i := range cells {
		c := &cells[i]
		w.raw(`<a class="c `)
		w.text(c.Class)
		if c.Selected {
			w.raw(" sel")
		}
		w.raw(`" href="`)
		w.url(c.Href)
		w.raw(`" title="`)
		w.text(c.Title)
		w.raw(`" data-slot="`)
		w.text(c.Slot)
		w.raw(`" data-state="`)
		w.text(c.State)
		w.raw(`"`)
		if c.Reason != "" {
			w.raw(` data-reason="`)
			w.text(c.Reason)
			w.raw(`"`)
		}
		w.raw("></a>")
	}
}
