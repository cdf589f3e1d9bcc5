package catalog

// Settings are an instance's run-time settings in the admin API: what POST
// /admin/reset sets back and returns.
type Settings struct {
	Faults Faults                   `json:"faults"`
	Caches map[string]CacheSettings `json:"caches"`
	Mode   Mode                     `json:"mode"`
}

// settingsOf reads svc's cache settings and mode and faults' knobs.
func settingsOf(svc *Service, faults *Injector) Settings {
	s := Settings{Caches: map[string]CacheSettings{}}
	if faults != nil {
		s.Faults = faults.Get()
	}
	if svc == nil {
		return s
	}
	for name, c := range svc.Caches() {
		beta := c.Beta()
		s.Caches[name] = CacheSettings{Strategy: c.Strategy(), Beta: &beta}
	}
	s.Mode = svc.Mode()
	return s
}

// reset sets every fault knob to 0 and each cache's strategy and beta and
// the reservation mode back to start, the settings the instance started
// with.
func (h *handlers) reset(start Settings) error {
	if h.faults != nil {
		if err := h.faults.Set(Faults{}); err != nil {
			return err
		}
	}
	if h.svc == nil {
		return nil
	}
	for name, c := range h.svc.Caches() {
		s, ok := start.Caches[name]
		if !ok {
			continue
		}
		if err := c.SetStrategy(s.Strategy); err != nil {
			return err
		}
		if err := c.SetBeta(*s.Beta); err != nil {
			return err
		}
	}
	return h.svc.SetMode(start.Mode)
}
