package host

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// backing is what the machine can give the process in memory: at most total bytes, available more
// now. It is the least of the kernel's MemAvailable (/proc/meminfo) and the room left under every
// cgroup memory limit above the process (v2 memory.max − memory.current, v1 limit_in_bytes −
// usage_in_bytes), so that the driver never hands out memory the kernel would have to back by
// killing the process.
type backing struct {
	total, available uint64
}

// machineBacking reads the machine's backing now.
func machineBacking() (backing, error) {
	mem, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return backing{}, fmt.Errorf("host driver: %w", err)
	}
	b := backing{total: meminfoField(mem, "MemTotal:"), available: meminfoField(mem, "MemAvailable:")}
	if b.total == 0 {
		ram, err := physicalRAM()
		if err != nil {
			return backing{}, fmt.Errorf("host driver: sysinfo: %w", err)
		}
		b.total, b.available = ram, ram
	}
	for _, lim := range cgroupLimits() {
		b.total = min(b.total, lim.max)
		if lim.used < lim.max {
			b.available = min(b.available, lim.max-lim.used)
		} else {
			b.available = 0
		}
	}
	b.available = min(b.available, b.total)
	return b, nil
}

// meminfoField is the value of a "Name:  123 kB" line of /proc/meminfo, in bytes (0 if absent).
func meminfoField(mem []byte, name string) uint64 {
	sc := bufio.NewScanner(bytes.NewReader(mem))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && f[0] == name {
			n, err := strconv.ParseUint(f[1], 10, 64)
			if err != nil {
				return 0
			}
			if len(f) >= 3 && f[2] == "kB" {
				n <<= 10
			}
			return n
		}
	}
	return 0
}

// cgroupLimit is a memory limit of one cgroup and what the cgroup uses now.
type cgroupLimit struct{ max, used uint64 }

// cgroupLimits lists the memory limits of the process's cgroup and of each cgroup above it (the
// tightest wins), v2 or v1; cgroups without a limit, or not visible, are left out.
func cgroupLimits() []cgroupLimit {
	data, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil
	}
	var out []cgroupLimit
	for line := range strings.Lines(string(data)) {
		parts := strings.SplitN(strings.TrimSpace(line), ":", 3)
		if len(parts) != 3 {
			continue
		}
		var root, maxFile, usedFile string
		switch {
		case parts[0] == "0" && parts[1] == "":
			root, maxFile, usedFile = "/sys/fs/cgroup", "memory.max", "memory.current"
		case hasController(parts[1], "memory"):
			root, maxFile, usedFile = "/sys/fs/cgroup/memory", "memory.limit_in_bytes", "memory.usage_in_bytes"
		default:
			continue
		}
		for dir := filepath.Join(root, parts[2]); strings.HasPrefix(dir, root); dir = filepath.Dir(dir) {
			if lim, ok := readLimit(filepath.Join(dir, maxFile), filepath.Join(dir, usedFile)); ok {
				out = append(out, lim)
			}
			if dir == root {
				break
			}
		}
	}
	return out
}

func hasController(list, name string) bool {
	for c := range strings.SplitSeq(list, ",") {
		if c == name {
			return true
		}
	}
	return false
}

// readLimit reads a cgroup's limit and usage; ok is false without a limit ("max", or v1's huge
// "unlimited" value) or without the files.
func readLimit(maxPath, usedPath string) (cgroupLimit, bool) {
	raw, err := os.ReadFile(maxPath)
	if err != nil {
		return cgroupLimit{}, false
	}
	s := strings.TrimSpace(string(raw))
	max, err := strconv.ParseUint(s, 10, 64)
	if err != nil || max >= 1<<62 { // "max", or v1's page-rounded MaxInt64
		return cgroupLimit{}, false
	}
	raw, err = os.ReadFile(usedPath)
	if err != nil {
		return cgroupLimit{}, false
	}
	used, err := strconv.ParseUint(strings.TrimSpace(string(raw)), 10, 64)
	if err != nil {
		return cgroupLimit{}, false
	}
	return cgroupLimit{max: max, used: used}, true
}
