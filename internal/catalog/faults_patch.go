package catalog

// FaultsPatch is a partial update of the Faults (PATCH /admin/faults): a
// knob given is set, a knob left out keeps its value.
type FaultsPatch struct {
	DBLatencyMS             *int `json:"db_latency_ms"`
	DBLatencyPercent        *int `json:"db_latency_percent"`
	CacheRedisDownPercent   *int `json:"cache_redis_down_percent"`
	ReservationPauseMS      *int `json:"reservation_pause_ms"`
	ReservationPausePercent *int `json:"reservation_pause_percent"`
}

// applyTo returns f with p's knobs set.
func (p FaultsPatch) applyTo(f Faults) Faults {
	for _, k := range []struct {
		v   *int
		dst *int
	}{
		{p.DBLatencyMS, &f.DBLatencyMS}, {p.DBLatencyPercent, &f.DBLatencyPercent},
		{p.CacheRedisDownPercent, &f.CacheRedisDownPercent},
		{p.ReservationPauseMS, &f.ReservationPauseMS}, {p.ReservationPausePercent, &f.ReservationPausePercent},
	} {
		if k.v != nil {
			*k.dst = *k.v
		}
	}
	return f
}

// Patch sets the knobs p gives and keeps the others, in one step (a
// concurrent Set or Patch comes wholly before or after it), and returns the
// faults now. When the result is out of range nothing changes.
func (in *Injector) Patch(p FaultsPatch) (Faults, error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	f := p.applyTo(in.f)
	if err := f.Validate(); err != nil {
		return in.f, err
	}
	in.f = f
	in.export()
	return f, nil
}
