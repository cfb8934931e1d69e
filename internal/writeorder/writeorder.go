// Package writeorder is the order in which a table's keys were written, oldest first: what a
// bounded table drops first. Dropping from it costs what is dropped (amortized O(1) a write),
// never a pass over the table or a sort of it under the lock its callers wait on.
package writeorder

// Write is the Seq-th write of Key.
type Write struct {
	Key string
	Seq uint64
}

// Queue is a table's writes, oldest first. An entry whose key was written again or dropped
// since is stale: the table knows (its record of the key carries another seq, or none), and
// skips it when it reaches the front. Not safe for concurrent use: the table's lock guards it.
type Queue struct {
	ws   []Write
	head int
	seq  uint64
}

// Push records a write of key and returns its seq, for the table to keep with the key.
func (q *Queue) Push(key string) uint64 {
	q.seq++
	q.ws = append(q.ws, Write{Key: key, Seq: q.seq})
	return q.seq
}

// Front is the oldest write not yet popped; ok is false when there is none.
func (q *Queue) Front() (w Write, ok bool) {
	if q.head == len(q.ws) {
		return Write{}, false
	}
	return q.ws[q.head], true
}

// Pop drops the oldest write (Front). The queue no longer holds its key for the GC.
func (q *Queue) Pop() {
	q.ws[q.head] = Write{}
	q.head++
}

// Len is how many writes the queue holds, stale ones included.
func (q *Queue) Len() int { return len(q.ws) - q.head }

// Tidy, called after each write, keeps the queue proportional to the live records of its table
// (live, current reporting whether a write is still a record's last): once the popped entries
// are more than half the slice, or the stale ones more than twice the live records (plus slack),
// it keeps only the current writes, from the front of the slice. Each tidy costs what the writes
// since the last one added, so O(1) amortized a write.
func (q *Queue) Tidy(live, slack int, current func(Write) bool) {
	if len(q.ws)-q.head <= 2*live+slack && q.head <= max(slack, len(q.ws)/2) {
		return
	}
	kept := q.ws[:0]
	for _, w := range q.ws[q.head:] {
		if current(w) {
			kept = append(kept, w)
		}
	}
	clear(q.ws[len(kept):])
	q.ws, q.head = kept, 0
}
