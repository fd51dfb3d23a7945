// Package units reads and writes byte counts ("40GiB", "12.80 GiB") for commands, reports and
// error messages.
package units

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
)

// Byte units.
const (
	KiB uint64 = 1 << 10
	MiB uint64 = 1 << 20
	GiB uint64 = 1 << 30
)

// FormatBytes renders n in the largest binary unit that keeps it >= 1 (e.g. "12.8 GiB").
func FormatBytes(n uint64) string {
	switch {
	case n >= GiB:
		return fmt.Sprintf("%.2f GiB", float64(n)/float64(GiB))
	case n >= MiB:
		return fmt.Sprintf("%.2f MiB", float64(n)/float64(MiB))
	case n >= KiB:
		return fmt.Sprintf("%.2f KiB", float64(n)/float64(KiB))
	}
	return fmt.Sprintf("%d B", n)
}

// FormatGiB renders n in GiB with two decimals and no unit ("12.80"), for table columns whose
// header names the unit.
func FormatGiB(n uint64) string { return fmt.Sprintf("%.2f", float64(n)/float64(GiB)) }

// ParseBytes reads a size such as "40GiB", "1.5 GB", "512MiB", "4096" or "2m" (binary units for
// K/M/G/T with or without "iB", decimal for "KB"/"MB"/"GB"/"TB").
func ParseBytes(s string) (uint64, error) {
	s = strings.TrimSpace(s)
	i := strings.IndexFunc(s, func(r rune) bool { return !unicode.IsDigit(r) && r != '.' })
	num, unit := s, ""
	if i >= 0 {
		num, unit = s[:i], strings.ToLower(strings.TrimSpace(s[i:]))
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("units: bad size %q", s)
	}
	mult, ok := map[string]float64{
		"": 1, "b": 1,
		"k": 1 << 10, "ki": 1 << 10, "kib": 1 << 10, "kb": 1e3,
		"m": 1 << 20, "mi": 1 << 20, "mib": 1 << 20, "mb": 1e6,
		"g": 1 << 30, "gi": 1 << 30, "gib": 1 << 30, "gb": 1e9,
		"t": 1 << 40, "ti": 1 << 40, "tib": 1 << 40, "tb": 1e12,
	}[unit]
	if !ok {
		return 0, fmt.Errorf("units: bad size unit in %q", s)
	}
	return uint64(v * mult), nil
}

// Bytes is a byte count that reads from text as ParseBytes does ("40GiB"), for flags.
type Bytes uint64

// UnmarshalText implements encoding.TextUnmarshaler.
func (b *Bytes) UnmarshalText(text []byte) error {
	n, err := ParseBytes(string(text))
	*b = Bytes(n)
	return err
}

func (b Bytes) String() string { return FormatBytes(uint64(b)) }

// RoundUp is n rounded up to a multiple of to (to > 0).
func RoundUp(n, to uint64) uint64 { return (n + to - 1) / to * to }
