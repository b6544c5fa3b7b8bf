package readahead

// SetBudgets changes the budgets of the three tiers (see Config) while the
// Loader runs: the process needs memory back (memory pressure), or can
// have it again. Lowering a budget frees what is beyond it at once: the
// least recently used decoded chunks (a memfd evicted while open stays
// alive until it is closed), every stored value kept (the compressed tier
// cannot evict by recency), and prefetched chunks waiting unread, the
// oldest first, and pooled buffers and chunk files (decoded chunks,
// stored values) kept beyond the decoded and readahead budgets; and
// prefetching less until the new budget holds. Raising
// one lets the tier fill again as chunks are read. A tier that New turned
// off (a budget of zero or less) stays off.
func (l *Loader) SetBudgets(decoded, compressed, readahead int64) {
	if !l.decodedOff {
		l.decoded.SetMaxBytes(max(decoded, 0))
	}
	l.handed.SetMaxBytes(max(decoded, 0))
	l.compressed.SetMaxBytes(compressed)
	l.staging.setMax(max(readahead, 0))
	ahead := max(decoded, 0) + max(readahead, 0)
	l.bufs.setMax(min(poolBytes, ahead))
	l.srcs.setMax(min(storedPoolBytes, ahead))
	l.mfiles.setMax(min(poolBytes, ahead))
}
