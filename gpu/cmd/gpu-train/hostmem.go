package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
)

// hostShare is the part of the host's available memory the batch search lets offloaded activations
// take. Pinned host memory cannot be swapped out: a batch whose activations do not fit is not met
// by an out-of-memory error but by the kernel's out-of-memory killer, which ends the whole run (it
// did, on a 125 GiB host, for GPT-2-XL offloading without recomputation). The rest is left for the
// driver's page tables, the process and the pinned buffers of the timed run's shapes.
const hostShare = 0.8

// hostBound is the largest batch whose offloaded activations fit in hostShare of the host's
// available memory, estimated from the timed run's step at the longest length (offloaded bytes
// grow with the batch), and the available bytes; 0 when not offloading or unknown.
func (ru *run) hostBound() (batch int, avail uint64) {
	if !ru.c.Offload {
		return 0, 0
	}
	g, ok := ru.graphs[[2]int{ru.c.Batch, slices.Max(ru.c.Seqs)}]
	if !ok {
		return 0, 0
	}
	m, err := ru.tr.Machine(g)
	if err != nil {
		return 0, 0
	}
	perSample := m.Counts().OffloadedBytes / uint64(ru.c.Batch)
	avail, err = memAvailable()
	if err != nil || perSample == 0 {
		return 0, 0
	}
	return int(float64(avail) * hostShare / float64(perSample)), avail
}

// memAvailable reads MemAvailable from /proc/meminfo: what the host can give without swapping.
func memAvailable() (uint64, error) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok || name != "MemAvailable" {
			continue
		}
		kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/meminfo: MemAvailable: %w", err)
		}
		return kb << 10, nil
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, errors.New("/proc/meminfo: no MemAvailable")
}
