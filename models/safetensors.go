package models

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
)

// The safetensors format is small enough to read directly: an 8-byte
// little-endian header length, a JSON header mapping names to dtype, shape
// and [begin,end) byte offsets into the data section, then the data. Reading
// it here (rather than through a library that hands out its own buffers) lets
// LoadWeights decode each tensor straight into memory from the caller's
// tensor.Engine, converting F16/BF16 to float32 on the way.

// ErrBadCheckpoint is wrapped by every malformed-checkpoint error.
var ErrBadCheckpoint = errors.New("models: bad checkpoint")

// safetensorsEntry is one tensor's header record.
type safetensorsEntry struct {
	Dtype   string   `json:"dtype"`
	Shape   []int    `json:"shape"`
	Offsets [2]int64 `json:"data_offsets"`
}

// safetensorsFile is an open checkpoint file.
type safetensorsFile struct {
	f       *os.File
	base    int64 // file offset of the data section
	entries map[string]safetensorsEntry
}

const maxHeaderBytes = 100 << 20

func openSafetensors(path string) (*safetensorsFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("models: open checkpoint: %w", err)
	}
	st, err := readSafetensorsHeader(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%w: %s: %w", ErrBadCheckpoint, path, err)
	}
	return st, nil
}

func readSafetensorsHeader(f *os.File) (*safetensorsFile, error) {
	var n uint64
	if err := binary.Read(f, binary.LittleEndian, &n); err != nil {
		return nil, err
	}
	if n > maxHeaderBytes {
		return nil, fmt.Errorf("header of %d bytes", n)
	}
	hdr := make([]byte, n)
	if _, err := io.ReadFull(f, hdr); err != nil {
		return nil, err
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(hdr, &raw); err != nil {
		return nil, err
	}
	st := &safetensorsFile{f: f, base: 8 + int64(n), entries: make(map[string]safetensorsEntry, len(raw))}
	for name, msg := range raw {
		if name == "__metadata__" {
			continue
		}
		var e safetensorsEntry
		if err := json.Unmarshal(msg, &e); err != nil {
			return nil, fmt.Errorf("tensor %s: %w", name, err)
		}
		if _, err := elemSize(e.Dtype); err != nil {
			return nil, fmt.Errorf("tensor %s: %w", name, err)
		}
		st.entries[name] = e
	}
	return st, nil
}

func (s *safetensorsFile) Close() error { return s.f.Close() }

func elemSize(dtype string) (int, error) {
	switch dtype {
	case "F32":
		return 4, nil
	case "F16", "BF16":
		return 2, nil
	}
	return 0, fmt.Errorf("dtype %s not supported (F32, F16, BF16)", dtype)
}

// readInto decodes tensor name into dst, which must hold exactly its elements.
func (s *safetensorsFile) readInto(name string, dst []float32) error {
	e, ok := s.entries[name]
	if !ok {
		return fmt.Errorf("%w: tensor %s missing", ErrBadCheckpoint, name)
	}
	size, _ := elemSize(e.Dtype)
	if e.Offsets[1]-e.Offsets[0] != int64(size*len(dst)) {
		return fmt.Errorf("%w: tensor %s holds %d bytes, want %d", ErrBadCheckpoint, name, e.Offsets[1]-e.Offsets[0], size*len(dst))
	}
	buf := make([]byte, e.Offsets[1]-e.Offsets[0])
	if _, err := s.f.ReadAt(buf, s.base+e.Offsets[0]); err != nil {
		return fmt.Errorf("%w: tensor %s: %w", ErrBadCheckpoint, name, err)
	}
	for i := range dst {
		switch e.Dtype {
		case "F32":
			dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(buf[4*i:]))
		case "BF16":
			dst[i] = math.Float32frombits(uint32(binary.LittleEndian.Uint16(buf[2*i:])) << 16)
		case "F16":
			dst[i] = halfToFloat(binary.LittleEndian.Uint16(buf[2*i:]))
		}
	}
	return nil
}

// halfToFloat converts an IEEE 754 binary16 value.
func halfToFloat(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	frac := uint32(h) & 0x3ff
	switch {
	case exp == 0x1f: // inf or nan
		return math.Float32frombits(sign | 0xff<<23 | frac<<13)
	case exp != 0:
		return math.Float32frombits(sign | (exp+112)<<23 | frac<<13)
	case frac == 0:
		return math.Float32frombits(sign)
	}
	// subnormal half: value = frac * 2^-24
	v := float32(frac) * float32(math.Ldexp(1, -24))
	if sign != 0 {
		v = -v
	}
	return v
}
