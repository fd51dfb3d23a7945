package stitch

// memoState is where the current iteration stands against the remembered memos (memo.go,
// dominate.go, shape.go): one value, reset by MarkIteration and moved only by the functions named
// at each phase below. Check verifies that its parts agree (checkMemos).
type memoState struct {
	phase  memoPhase
	follow memo // the memo followed: set in memoFollowing and memoDominating, nil otherwise
	cursor int  // index in follow of the next entry to compare, at most len(follow)
	// sizes of follow's large requests, while memoDominating: a request of one of them at another
	// ordinal means the scripts have shifted (stillDominated)
	followSizes map[uint64]bool
	dominance   dominance
	// scriptEnded is the dominating memo left where its script had no large request: set exactly
	// in domScriptEnded and domHandedOver, so that the hand-over skips it
	scriptEnded memo
	// scattered: the iteration has followed a dominating memo, or a memo recorded after one: its
	// blocks lie in larger places with their tails free (dominate.go)
	scattered bool
	// afterDominating: the previous iteration was scattered; a new shape flushes the large cache
	// before it is laid out (beginNewShape)
	afterDominating bool
	// flushOwed: the lookup that found the iteration a new shape after a scattered one left the
	// large cache's flush to its caller (payShapeFlush); never set between two calls
	flushOwed bool
	// stranded: the bytes the places of a dominating memo held beyond the requests that took them
	// this iteration (strandFits)
	stranded uint64
}

// memoPhase is the current iteration's relation to the memos.
type memoPhase uint8

const (
	// memoUnmarked: no iteration has begun: the caller has marked none and the finder
	// (iterfinder.go) has found none. There are no memos.
	memoUnmarked memoPhase = iota
	// memoChoosing: marked, following no memo, not yet a new shape: the next large request
	// chooses one (memoPlace). MarkIteration starts every iteration here; followed returns here
	// when the memo's script differs from the iteration's (a hand-over).
	memoChoosing
	// memoFollowing: following follow, a memo that agrees with every large request so far
	// (memoPlace).
	memoFollowing
	// memoDominating: following follow, a memo of a longer shape that dominates the iteration
	// (followDominating).
	memoDominating
	// memoNewShape: no memo agrees with the iteration or dominates it: the rules place it, from
	// coalesced memory (shape.go), until the next mark (beginNewShape).
	memoNewShape
)

// dominance is how far the current iteration has gone with dominating memos: at most one, but for
// one hand-over where the first one's script ended (dominate.go).
type dominance uint8

const (
	domNone        dominance = iota // no dominating memo followed
	domOne                          // one followed (maybe left since): no other may be
	domScriptEnded                  // the one followed was left where its script had no large request: one hand-over allowed
	domHandedOver                   // handed over to a second one: no other may be
)

// marked reports whether the caller marks iterations (MarkIteration has been called).
func (e *Engine) marked() bool { return e.iter.phase != memoUnmarked }

// following reports whether the current iteration follows a memo (agreeing or dominating).
func (s *memoState) following() bool {
	return s.phase == memoFollowing || s.phase == memoDominating
}

// startIteration resets the state at a mark: the new iteration chooses its memo afresh.
func (s *memoState) startIteration() {
	*s = memoState{phase: memoChoosing, followSizes: s.followSizes, afterDominating: s.scattered}
}

// followFrom makes the iteration follow memo m, which agrees with it, from entry j.
func (s *memoState) followFrom(m memo, j int) {
	s.phase, s.follow, s.cursor = memoFollowing, m, j
	s.scattered = s.scattered || m[len(m)-1].scattered // laid out after a dominating memo
}

// handOver stops following the memo: the next large request chooses another (memoChoosing).
func (s *memoState) handOver() { s.phase, s.follow = memoChoosing, nil }
