//go:build realvllm

package realvllm

import (
	"fmt"
	"sort"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Families parses a text exposition into its metric families by name.
func Families(text string) (map[string]*dto.MetricFamily, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		return nil, fmt.Errorf("parse exposition: %w", err)
	}
	return fams, nil
}

// SampleNames are the series names a family exposes (histograms: _bucket, _sum, _count).
func SampleNames(fams map[string]*dto.MetricFamily) map[string]bool {
	out := map[string]bool{}
	for name, f := range fams {
		switch f.GetType() {
		case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
			out[name+"_bucket"], out[name+"_sum"], out[name+"_count"] = true, true, true
		case dto.MetricType_SUMMARY:
			out[name], out[name+"_sum"], out[name+"_count"] = true, true, true
		default:
			out[name] = true
		}
	}
	return out
}

// LabelNames is the sorted union of the label names of a family's metrics.
func LabelNames(f *dto.MetricFamily) []string {
	set := map[string]bool{}
	for _, m := range f.GetMetric() {
		for _, l := range m.GetLabel() {
			set[l.GetName()] = true
		}
	}
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// LabelValues is the sorted set of values of one label across a family's metrics.
func LabelValues(f *dto.MetricFamily, label string) []string {
	set := map[string]bool{}
	for _, m := range f.GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == label {
				set[l.GetValue()] = true
			}
		}
	}
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Buckets are the upper bounds of a histogram family's first metric, without +Inf.
func Buckets(f *dto.MetricFamily) []float64 {
	if len(f.GetMetric()) == 0 || f.GetMetric()[0].GetHistogram() == nil {
		return nil
	}
	var out []float64
	for _, b := range f.GetMetric()[0].GetHistogram().GetBucket() {
		out = append(out, b.GetUpperBound())
	}
	return out
}

// Sum adds up a family's values over the metrics whose labels include match: counter and gauge
// values, a histogram's sample count (suffix "_count") or sum ("_sum").
func Sum(fams map[string]*dto.MetricFamily, name string, match map[string]string) float64 {
	field := ""
	fam := fams[name]
	if fam == nil {
		for _, suf := range []string{"_count", "_sum"} {
			if base, ok := strings.CutSuffix(name, suf); ok && fams[base] != nil {
				fam, field = fams[base], suf
			}
		}
	}
	if fam == nil {
		return 0
	}
	total := 0.0
next:
	for _, m := range fam.GetMetric() {
		for k, v := range match {
			found := false
			for _, l := range m.GetLabel() {
				if l.GetName() == k && l.GetValue() == v {
					found = true
				}
			}
			if !found {
				continue next
			}
		}
		switch {
		case m.GetCounter() != nil:
			total += m.GetCounter().GetValue()
		case m.GetGauge() != nil:
			total += m.GetGauge().GetValue()
		case m.GetHistogram() != nil && field == "_sum":
			total += m.GetHistogram().GetSampleSum()
		case m.GetHistogram() != nil:
			total += float64(m.GetHistogram().GetSampleCount())
		case m.GetUntyped() != nil:
			total += m.GetUntyped().GetValue()
		}
	}
	return total
}

// Series are the samples of a text exposition whose names start with prefix: the series as
// written (name and labels) to its value as written. Two expositions with equal Series did not
// change a single sample.
func Series(text, prefix string) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, prefix) {
			continue
		}
		if i := strings.LastIndexByte(line, ' '); i > 0 {
			out[line[:i]] = line[i+1:]
		}
	}
	return out
}

// Changed lists the series of b that are not in a or whose value differs, and those of a gone
// from b, sorted.
func Changed(a, b map[string]string) []string {
	var out []string
	for k, v := range b {
		if w, ok := a[k]; !ok {
			out = append(out, "new "+k+" "+v)
		} else if w != v {
			out = append(out, k+" "+w+" -> "+v)
		}
	}
	for k := range a {
		if _, ok := b[k]; !ok {
			out = append(out, "gone "+k)
		}
	}
	sort.Strings(out)
	return out
}
