package scaleplot

import (
	"cmp"
	"fmt"
	"html"
	"math"
	"strings"
)

// Chart is a line chart: series of points over two axes, each linear or
// logarithmic.
type Chart struct {
	Title          string
	XLabel, YLabel string
	LogX, LogY     bool
	Series         []Series
}

// Series is one line of a chart.
type Series struct {
	Name   string
	Points []XY // in the order drawn
	Dashed bool
	Color  string // a CSS colour; empty: the palette's next
}

// XY is one point.
type XY struct{ X, Y float64 }

const (
	width, height          = 720, 420
	left, right, top, base = 80, 200, 40, 60 // margins
)

var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"}

// axis maps data values to pixels along one side.
type axis struct {
	lo, hi   float64
	log      bool
	from, to float64 // pixels
}

func (a axis) at(v float64) float64 {
	lo, hi := a.lo, a.hi
	if a.log {
		v, lo, hi = math.Log10(v), math.Log10(lo), math.Log10(hi)
	}
	return a.from + (v-lo)/(hi-lo)*(a.to-a.from)
}

// ticks are the values labelled along the axis: powers of ten on a log
// axis (with 2 and 5 between when few), five steps on a linear one.
func (a axis) ticks() []float64 {
	var ts []float64
	if a.log {
		for p := math.Floor(math.Log10(a.lo)); p <= math.Ceil(math.Log10(a.hi)); p++ {
			for _, m := range []float64{1, 2, 5} {
				if v := m * math.Pow(10, p); v >= a.lo && v <= a.hi {
					ts = append(ts, v)
				}
			}
		}
		return ts
	}
	step := niceStep((a.hi - a.lo) / 5)
	for v := math.Ceil(a.lo/step) * step; v <= a.hi+step/1e9; v += step {
		ts = append(ts, v)
	}
	return ts
}

func niceStep(raw float64) float64 {
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= raw {
			return m * p
		}
	}
	return 10 * p
}

// bounds are the data's extent, widened to whole decades on a log axis and
// to zero on a linear one.
func bounds(vs []float64, log bool) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, v := range vs {
		lo, hi = math.Min(lo, v), math.Max(hi, v)
	}
	if log {
		return math.Pow(10, math.Floor(math.Log10(lo))), math.Pow(10, math.Ceil(math.Log10(hi)))
	}
	return 0, hi * 1.05
}

func label(v float64) string {
	switch {
	case v >= 1000 && math.Mod(v, 1000) == 0:
		return fmt.Sprintf("%gk", v/1000)
	default:
		return fmt.Sprintf("%g", v)
	}
}

// SVG renders the chart.
func (c Chart) SVG() string {
	var xs, ys []float64
	for _, s := range c.Series {
		for _, p := range s.Points {
			xs, ys = append(xs, p.X), append(ys, p.Y)
		}
	}
	xlo, xhi := bounds(xs, c.LogX)
	ylo, yhi := bounds(ys, c.LogY)
	x := axis{xlo, xhi, c.LogX, left, width - right}
	y := axis{ylo, yhi, c.LogY, height - base, top}

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", width, height)
	fmt.Fprintf(&b, `<text x="%d" y="22" font-size="15" font-weight="bold">%s</text>`+"\n", left, html.EscapeString(c.Title))
	c.grid(&b, x, y)
	for i, s := range c.Series {
		color := cmp.Or(s.Color, palette[i%len(palette)])
		c.line(&b, s, color, x, y, i)
	}
	b.WriteString("</svg>\n")
	return b.String()
}

func (c Chart) grid(b *strings.Builder, x, y axis) {
	for _, t := range x.ticks() {
		px := x.at(t)
		fmt.Fprintf(b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#ddd"/>`+"\n", px, top, px, height-base)
		fmt.Fprintf(b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", px, height-base+16, label(t))
	}
	for _, t := range y.ticks() {
		py := y.at(t)
		fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/>`+"\n", left, py, width-right, py)
		fmt.Fprintf(b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", left-6, py+4, label(t))
	}
	fmt.Fprintf(b, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#333"/>`+"\n", left, top, width-right-left, height-base-top)
	fmt.Fprintf(b, `<text x="%d" y="%d" text-anchor="middle">%s</text>`+"\n", (left+width-right)/2, height-20, html.EscapeString(c.XLabel))
	fmt.Fprintf(b, `<text transform="translate(18 %d) rotate(-90)" text-anchor="middle">%s</text>`+"\n", (top+height-base)/2, html.EscapeString(c.YLabel))
}

func (c Chart) line(b *strings.Builder, s Series, color string, x, y axis, i int) {
	var pts []string
	for _, p := range s.Points {
		pts = append(pts, fmt.Sprintf("%.1f,%.1f", x.at(p.X), y.at(p.Y)))
	}
	dash := ""
	if s.Dashed {
		dash = ` stroke-dasharray="6 4"`
	}
	fmt.Fprintf(b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2"%s/>`+"\n", strings.Join(pts, " "), color, dash)
	if !s.Dashed {
		for _, p := range pts {
			xy := strings.Split(p, ",")
			fmt.Fprintf(b, `<circle cx="%s" cy="%s" r="3" fill="%s"/>`+"\n", xy[0], xy[1], color)
		}
	}
	ly := top + 14 + 20*i
	fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"%s/>`+"\n", width-right+12, ly-4, width-right+36, ly-4, color, dash)
	fmt.Fprintf(b, `<text x="%d" y="%d">%s</text>`+"\n", width-right+42, ly, html.EscapeString(s.Name))
}
