package strictdecode

import "strings"

// suggest returns the known key closest to k when it is a plausible typo.
func suggest(k string, fields map[string][]int) string {
	best, bestDist := "", 3
	lk := strings.ToLower(k)
	for name := range fields {
		dist := editDistance(lk, name)
		if dist < bestDist || (dist == bestDist && best != "" && name < best) {
			best, bestDist = name, dist
		}
	}
	if best == "" || bestDist > max(1, len(best)/3) {
		return ""
	}
	return best
}

// editDistance is the optimal string alignment distance: insertions,
// deletions, substitutions and transpositions of neighbours each cost 1.
func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 64
	}
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}
