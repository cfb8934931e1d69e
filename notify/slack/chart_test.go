package slack

import (
	"bytes"
	"context"
	"image/png"
	"os"
	"testing"

	"github.com/vllm-responder/vllm-responder/internal/golden"
	"github.com/vllm-responder/vllm-responder/playbooks"
)

func TestTheChartIsAPNGWithOnePanelPerSeries(t *testing.T) {
	spec := diagnosisFor(playbooks.VerdictCapacityPastKnee, "vllm-0").Charts[0]
	panels, err := fetchChart(context.Background(), fakeProm{}, spec, t0)
	if err != nil {
		t.Fatal(err)
	}
	if len(panels) != 2 {
		t.Fatalf("%d panels", len(panels))
	}
	b, err := renderChartPNG(spec.Title, panels, t0.Add(-spec.Range), t0, startTS)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if w, h := img.Bounds().Dx(), img.Bounds().Dy(); w < 800 || h < 600 {
		t.Errorf("chart is %dx%d, too small to read on a phone", w, h)
	}
	if golden.Updating() {
		_ = os.WriteFile("testdata/chart-example.png", b, 0o644)
	}
}
