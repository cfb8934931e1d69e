// Package sources is the one list of fact sources (package facts): the playbooks compile against
// their facts (Catalog), the evidence engine looks them up (List, evidence.EngineOptions.Facts).
//
// Adding a source is a new package that implements facts.Source and one line in List (and, when
// it has a config section, a field of Config that internal/stack fills from it). Its facts then
// join the runbooks' table (docs/playbooks/README.md, pinned by this package's test), playbooks
// read them by name, and fixtures record them under `facts:`.
package sources

import (
	"github.com/vllm-responder/vllm-responder/facts"
	"github.com/vllm-responder/vllm-responder/gpu"
	"github.com/vllm-responder/vllm-responder/kube"
	"github.com/vllm-responder/vllm-responder/lora"
	"github.com/vllm-responder/vllm-responder/router"
)

// Config is the fact sources' config sections.
type Config struct {
	// Kubernetes is the kubernetes: section (nil: kube-state-metrics is not read).
	Kubernetes *kube.Config
	// GPU is the gpu: section (nil: dcgm-exporter is not read).
	GPU *gpu.Config
}

// List is every fact source, in order: the order of their facts in the runbooks' table, of
// their notes and evidence in a diagnosis, and the order in which a lookup's sources are tried
// when one rule reads facts of two.
func List(c Config) []facts.Source {
	return []facts.Source{
		kube.Source{Config: c.Kubernetes},
		lora.Source{},
		gpu.Source{Config: c.GPU, Kube: c.Kubernetes},
		router.Source{},
	}
}

// catalog is the facts of List: their names, kinds and docs do not depend on the config.
var catalog = facts.NewCatalog(List(Config{})...)

// Catalog is every fact of every source, as a playbook compiles against them.
func Catalog() *facts.Catalog { return catalog }
