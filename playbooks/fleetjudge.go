package playbooks

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/expr-lang/expr"
)

// fleetJudgement is what the fleet adds to a judgement: the derived values, the view and notes.
type fleetJudgement struct {
	values  map[string]*float64 // q_this, q_max, ..., fleet_pods, fleet_affected, fleet_engines
	view    *FleetView
	missing []string // derived names without a value
	notes   []string
}

// fleetCells are one query's values by pod (its ranks added up) and by rank of each pod.
type fleetCells struct {
	pod  map[FleetKey]float64
	rank map[FleetKey]map[DPRank]float64
}

// fleetTable is the fleet's values laid out for a judgement, filled step by step by judgeFleet.
type fleetTable struct {
	p          *Playbook
	fl         *Fleet
	cells      []fleetCells        // by query, as fl.Queries
	pods       []FleetKey          // by namespace and name
	roles      map[FleetKey]string // each pod's role in disaggregated serving ("" without)
	pool       []FleetKey          // the pods compared with the focus pod: those of its role
	namespaces map[string]bool
	ranked     []FleetKey // worst first by fl.Focus
	focus      FleetKey   // the alert's pod, or the worst when it names none (chosen)
	chosen     bool
	view       *FleetView
	ranks      []DPRank // the focus pod's data-parallel ranks, the one diagnosed first
	notes      []string
}

// queryTally is what one fleet query's stats are computed from (fleetStats).
type queryTally struct {
	this       *float64             // the focus pod's value
	all        []float64            // every pod's value
	others     []float64            // the other pods' values
	rankThis   *float64             // the focus pod's first rank's value (nil with one rank)
	rankOthers []float64            // the focus pod's other ranks' values
	byRole     map[string][]float64 // every pod's value by the pod's role
}

// judgeFleet builds the sibling comparison from the fleet values (exprs are the fleet queries
// as sent, shown in the view's columns): tabulate the values by pod and rank, rank the pods
// worst first, find the focus pod (the alert's, by the pod label in force and in the alert's
// namespace; the worst when the alert names none), lay out the view, the focus pod's ranks, and
// the stats the verdicts read.
func judgeFleet(p *Playbook, vals FleetValues, labels map[string]string, exprs []string, ps PodScope) fleetJudgement {
	t := tabulate(p, vals)
	t.rankPods()
	t.findFocus(labels, ps)
	t.findPool()
	t.layOut(labels, exprs)
	t.rankFocusRanks(labels)
	return t.stats()
}

// tabulate lays the values out by query, pod and rank: a pod's ranks add up by the query's
// aggregation.
func tabulate(p *Playbook, vals FleetValues) *fleetTable {
	fl := p.Fleet
	t := &fleetTable{p: p, fl: fl, cells: make([]fleetCells, len(fl.Queries)), namespaces: map[string]bool{}, roles: map[FleetKey]string{}}
	podSet := map[FleetKey]bool{}
	for i, q := range fl.Queries {
		byPod := map[FleetKey][]float64{}
		c := &t.cells[i]
		c.rank = map[FleetKey]map[DPRank]float64{}
		for ks, v := range vals[q.Name] {
			k := ParseFleetKey(ks)
			pk := k.pod()
			podSet[pk] = true
			if k.Role != "" {
				t.roles[pk] = k.Role
			}
			t.namespaces[pk.Namespace] = true
			byPod[pk] = append(byPod[pk], v)
			if c.rank[pk] == nil {
				c.rank[pk] = map[DPRank]float64{}
			}
			c.rank[pk][k.Rank] = v
		}
		c.pod = make(map[FleetKey]float64, len(byPod))
		for pk, xs := range byPod {
			c.pod[pk] = *fl.Aggs[i].Of(xs)
		}
	}
	t.pods = slices.SortedFunc(maps.Keys(podSet), comparePods)
	return t
}

func comparePods(a, b FleetKey) int {
	return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Pod, b.Pod))
}

// cell is query qi's value of pod, nil when the pod has no series for it.
func (t *fleetTable) cell(qi int, pod FleetKey) *float64 {
	if v, ok := t.cells[qi].pod[pod]; ok {
		return &v
	}
	return nil
}

// rankCell is query qi's value of the focus pod's rank r.
func (t *fleetTable) rankCell(qi int, r DPRank) *float64 {
	if v, ok := t.cells[qi].rank[t.focus][r]; ok {
		return &v
	}
	return nil
}

// name is how a pod is shown: with its namespace only when the answer spans several.
func (t *fleetTable) name(k FleetKey) string {
	if len(t.namespaces) > 1 {
		return k.String()
	}
	return k.Pod
}

// worstFirst orders by the fleet's focus queries, highest value first (a missing value last),
// then by tie.
func worstFirst[K any](fl *Fleet, val func(qi int, k K) *float64, tie func(a, b K) int) func(a, b K) int {
	return func(a, b K) int {
		for _, n := range fl.Focus {
			va, vb := val(fl.index[n], a), val(fl.index[n], b)
			switch {
			case va == nil && vb == nil:
				continue
			case vb == nil:
				return -1
			case va == nil:
				return 1
			case *va > *vb:
				return -1
			case *va < *vb:
				return 1
			}
		}
		return tie(a, b)
	}
}

// rankPods orders the pods worst first.
func (t *fleetTable) rankPods() {
	t.ranked = slices.Clone(t.pods)
	slices.SortStableFunc(t.ranked, worstFirst(t.fl, t.cell, comparePods))
}

// findFocus picks the pod diagnosed: the one the labels name (in their namespace), else the
// worst.
func (t *fleetTable) findFocus(labels map[string]string, ps PodScope) {
	_, pod, ok := ps.resolve(labels)
	if !ok {
		if len(t.ranked) > 0 {
			t.focus, t.chosen = t.ranked[0], true
		}
		return
	}
	t.focus = FleetKey{Namespace: labels["namespace"], Pod: pod}
	// The alert's pod in the answer: one, or one per namespace when the alert names none (an
	// answer without namespaces, a static scrape or a recorded fixture, matches any).
	var same []FleetKey
	for _, k := range t.ranked {
		if k.Pod == pod && (t.focus.Namespace == "" || k.Namespace == "" || k.Namespace == t.focus.Namespace) {
			same = append(same, k)
		}
	}
	switch {
	case len(same) == 1:
		t.focus = same[0]
	case len(same) > 1:
		t.focus = same[0]
		t.notes = append(t.notes, fmt.Sprintf("the alert names no namespace and %d namespaces have a pod %s: the sibling comparison is the worst of them, %s",
			len(same), pod, t.focus.String()))
	case t.focus.Namespace == "" && len(t.namespaces) == 1:
		for ns := range t.namespaces {
			t.focus.Namespace = ns
		}
	}
}

// findPool finds the pods the focus pod is compared with: those of its role where pods have
// roles (a decode pod is not a prefill pod's sibling), else every pod.
func (t *fleetTable) findPool() {
	role := t.roles[t.focus]
	for _, k := range t.pods {
		if t.roles[k] == role {
			t.pool = append(t.pool, k)
		}
	}
}

// roleCount is how many pods have role.
func (t *fleetTable) roleCount(role string) int {
	n := 0
	for _, r := range t.roles {
		if r == role {
			n++
		}
	}
	return n
}

// pooled reports whether the comparison is split into pools: some pod has a role.
func (t *fleetTable) pooled() bool { return len(t.roles) > 0 }

// row is one line of the view: the values of the shown (not hidden) queries.
func (t *fleetTable) row(label, ns, role string, vals []*float64) FleetRow {
	r := FleetRow{Pod: label, Namespace: ns, Role: role}
	for _, i := range t.fl.shown {
		r.Values = append(r.Values, vals[i])
		r.Texts = append(r.Texts, FormatValue(vals[i], t.fl.Queries[i].Unit))
	}
	return r
}

// values are query by query the values of one pod (or rank), by cell.
func (t *fleetTable) values(cell func(qi int) *float64) []*float64 {
	vs := make([]*float64, len(t.fl.Queries))
	for i := range t.fl.Queries {
		vs[i] = cell(i)
	}
	return vs
}

// layOut builds the view: the columns, a row per pod (the focus pod first, the others worst
// first), which pods are affected and what the scope of the problem is.
func (t *fleetTable) layOut(labels map[string]string, exprs []string) {
	fl := t.fl
	view := &FleetView{By: fl.By, Focus: t.name(t.focus), FocusChosen: t.chosen, Pods: len(t.pool), Siblings: map[string]string{}}
	if t.pooled() {
		view.Pool = t.roles[t.focus]
		if view.Pool == "" {
			view.Pool = NoRole
		}
	}
	for _, s := range siblingScope(t.p.Scope, fl.By) {
		if v := labels[s]; v != "" {
			view.Siblings[s] = v
		}
	}
	for _, i := range fl.shown {
		q := fl.Queries[i]
		view.Columns = append(view.Columns, FleetColumn{Name: q.Name, Title: q.Title, Unit: q.Unit, Query: exprs[i]})
	}
	focusAffected := false
	var env map[string]any // one for every pod in turn
	if fl.affected != nil {
		env = fleetPodEnv(t.p, fl, nil)
	}
	for _, pod := range t.ranked {
		vs := t.values(func(qi int) *float64 { return t.cell(qi, pod) })
		r := t.row(t.name(pod), pod.Namespace, t.roles[pod], vs)
		r.Focus = pod == t.focus
		if fl.affected != nil {
			setFleetPodValues(env, fl, vs)
			ok, err := expr.Run(fl.affected, env)
			r.Affected = err == nil && ok == true
		}
		if r.Affected && t.roles[pod] == t.roles[t.focus] { // counted in the focus pod's pool
			focusAffected = focusAffected || r.Focus
			view.AffectedPods = append(view.AffectedPods, t.name(pod))
		}
		view.Rows = append(view.Rows, r)
	}
	// The focus pod leads the table, the others follow worst first.
	slices.SortStableFunc(view.Rows, func(a, b FleetRow) int {
		switch {
		case a.Focus == b.Focus:
			return 0
		case a.Focus:
			return -1
		default:
			return 1
		}
	})
	view.Affected = len(view.AffectedPods)
	view.Scope = fleetScope(view, focusAffected)
	t.view = view
}

// rankFocusRanks orders the focus pod's data-parallel ranks worst first by the same ranking, and
// shows them when there are several. An alert about one rank (VLLMEngineStalled keeps vLLM's
// engine label) is about that one, whatever the ranking puts first: with two wedged ranks in a
// pod, each alert names its own.
func (t *fleetTable) rankFocusRanks(labels map[string]string) {
	set := map[DPRank]bool{}
	for i := range t.fl.Queries {
		for r := range t.cells[i].rank[t.focus] {
			set[r] = true
		}
	}
	t.ranks = slices.Collect(maps.Keys(set))
	slices.SortStableFunc(t.ranks, worstFirst(t.fl, t.rankCell, compareRanks))
	if want := DPRank(labels["engine"]); want != "" && !t.chosen {
		if i := slices.Index(t.ranks, want); i > 0 {
			t.ranks = slices.Insert(slices.Delete(t.ranks, i, i+1), 0, want)
		}
	}
	if len(t.ranks) < 2 {
		return
	}
	t.view.Rank = t.ranks[0]
	for _, rk := range t.ranks {
		r := t.row(string(rk), t.focus.Namespace, "", t.values(func(qi int) *float64 { return t.rankCell(qi, rk) }))
		r.Focus = rk == t.ranks[0]
		t.view.Ranks = append(t.view.Ranks, r)
	}
}

// tally is what query qi's stats are computed from.
func (t *fleetTable) tally(qi int) *queryTally {
	q := &queryTally{byRole: map[string][]float64{}}
	for _, pod := range t.pods {
		v := t.cell(qi, pod)
		if v == nil {
			continue
		}
		if role := t.roles[pod]; role != "" {
			q.byRole[role] = append(q.byRole[role], *v)
		}
		if t.roles[pod] != t.roles[t.focus] {
			continue // another pool
		}
		q.all = append(q.all, *v)
		if pod == t.focus {
			q.this = v
		} else {
			q.others = append(q.others, *v)
		}
	}
	if len(t.ranks) > 1 {
		q.rankThis = t.rankCell(qi, t.ranks[0])
		for _, r := range t.ranks[1:] {
			if v := t.rankCell(qi, r); v != nil {
				q.rankOthers = append(q.rankOthers, *v)
			}
		}
	}
	return q
}

// stats computes the values the verdicts read (fleetStats per query, then fleetTotals).
func (t *fleetTable) stats() fleetJudgement {
	fj := fleetJudgement{values: map[string]*float64{}, notes: t.notes}
	set := func(name string, v *float64) {
		fj.values[name] = v
		if v == nil {
			fj.missing = append(fj.missing, name)
		}
	}
	for i, q := range t.fl.Queries {
		tally := t.tally(i)
		for _, s := range fleetStats {
			set(q.Name+"_"+s.name, s.of(tally))
		}
	}
	for _, tot := range fleetTotals {
		v := tot.of(t)
		set(tot.name, &v)
	}
	if len(t.pods) > 0 {
		fj.view = t.view
	}
	return fj
}

// FocusPod is the pod a diagnosis of p is about, as Judge will pick it from the fleet's values:
// the alert's pod (in its namespace), or the worst pod when the alert names none. The
// namespace is the series' (empty where they carry none). ok is false without a fleet section
// or when no pod answered.
func (p *Playbook) FocusPod(vals FleetValues, labels map[string]string, ps PodScope) (namespace, pod string, ok bool) {
	if p.Fleet == nil {
		return "", "", false
	}
	t := tabulate(p, vals)
	t.rankPods()
	t.findFocus(labels, ps)
	if t.focus.Pod == "" || t.focus.Pod == NoLabel {
		return "", "", false
	}
	return t.focus.Namespace, t.focus.Pod, true
}
