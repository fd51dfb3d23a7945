// Package sim is a simulated stitch.Driver: accounting only, no backing memory.
//
// It exists so that the stitching engine can be tested and measured without a device. It
// fabricates virtual addresses (increasing, never reused, so a use-after-free shows as an
// unknown address rather than silently hitting new memory), enforces a physical capacity
// (Create beyond it fails with an error wrapping stitch.ErrOutOfMemory), and validates every
// call as strictly as CUDA's VMM API would: mapping outside a reserved range or over an
// existing mapping, unmapping what is not mapped, releasing mapped memory or freeing a range
// that still has mappings are all errors.
//
// For tests it counts calls per stitch.CallKind (Calls), counts live objects — physical
// handles, reserved ranges, mappings, events — for leak checks (Live), injects faults (fail
// the N-th call of a kind with a chosen error: WithFault or FailNth), and lets events complete
// on cue: immediately by default, after being queried K times (WithEventDelay), once a latency
// has passed since they were recorded (WithEventLatency), or only when the test says so
// (WithManualEvents: CompleteEvent, CompleteStream, CompleteEvents; Synchronize completes every
// event in every mode). A stream runs in order: when an event completes, so does every event
// recorded before it on its stream.
//
// A Driver is safe for concurrent use (one mutex), although the engine serialises its calls.
package sim
