/*
Copyright 2026 The Conveyor Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package kafkaconnector

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
	"github.com/conveyor-dev/conveyor/controllers/statusmetrics"
	"github.com/conveyor-dev/conveyor/runtime/connectapi"
)

// clusterViews keeps, per ConnectCluster, the last whole-cluster read of
// the runtime (GET /connectors?expand=status,info,limits,topics), shared by
// the passes of the cluster's connectors and the ConnectCluster's scan for
// unmanaged connectors (unmanaged.go): at rest a cluster of N connectors
// costs one REST call per resync instead of four per connector, and one
// per quietMax (--connector-resync-max) once its reads stop changing.
//
// A pass may use a view only when the KafkaConnector is as the connector's
// last pass left it (the same resourceVersion: only time passed, so a spec
// edit, an annotation or anyone's change is read fresh from the workers),
// and the view is younger than its maxAge and was started after the
// connector's last action (create, config write, restart, state change)
// finished and, for a pass that follows its previous one quickly, after
// that one looked: what a pass acts on is never older than what it did or
// saw. Reads are numbered from one counter, so "after" does not depend on
// clocks.
//
// Everything here is forgotten with what it is about: a cluster's view when
// the cluster is deleted (forgetCluster) or its spec changes (the next read
// replaces it), a connector's marks when the KafkaConnector is gone
// (forgetConnector). Entries counts them.
type clusterViews struct {
	seq   atomic.Uint64
	mu    sync.Mutex
	views map[string]*clusterView // namespace/name of the ConnectCluster
	// acted is the counter's value when each connector's last action ended.
	acted sync.Map // namespace/name -> uint64
	// passed is the counter's value when each connector's last pass looked.
	passed sync.Map // namespace/name -> passMark
	// left is the resourceVersion each connector's last pass left.
	left sync.Map // namespace/name -> string
}

// leave records the resourceVersion a pass left the KafkaConnector at. A
// connector seen for the first time counts as having just acted: no view
// read before it was first seen serves it, however its first pass ended
// (a KafkaConnector created after another of its name was forgotten must
// not see the other in an older read).
func (v *clusterViews) leave(connector, resourceVersion string) {
	if _, seen := v.left.Swap(connector, resourceVersion); !seen {
		v.markActed(connector)
	}
}

// forgetConnector drops what is kept about a KafkaConnector that is gone.
func (v *clusterViews) forgetConnector(connector string) {
	v.left.Delete(connector)
	v.passed.Delete(connector)
	v.acted.Delete(connector)
}

// forgetCluster drops the view of a ConnectCluster that is gone.
func (v *clusterViews) forgetCluster(cluster string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	delete(v.views, cluster)
}

// unchanged says the KafkaConnector is as its last pass left it.
func (v *clusterViews) unchanged(connector, resourceVersion string) bool {
	rv, ok := v.left.Load(connector)
	return ok && rv.(string) == resourceVersion
}

// passMark is when a connector's pass looked.
type passMark struct {
	seq uint64
	at  time.Time
}

// clusterView is one whole-cluster read.
type clusterView struct {
	// of is the cluster read: its UID and generation (viewOf).
	of      string
	seq     uint64 // the counter when the read started
	at      time.Time
	done    chan struct{} // closed when the read ended
	entries map[string]connectapi.ConnectorExpansion
	// managed is what the operator's cache held just before the read was
	// sent: the KafkaConnectors of the cluster that manage their connector
	// (unmanaged.go). nil when the cache could not be listed.
	managed map[string]bool
	// since is when the reads in a row that found the workers exactly as
	// this one did began (this read's start when the one before differed):
	// how long the workers stayed unchanged stretches the view's life
	// (maxAge).
	since time.Time
	err   error
}

// viewRead sends one whole-cluster read; managed is what the cache held
// just before it was sent (nil when unknown).
type viewRead func(ctx context.Context) (entries map[string]connectapi.ConnectorExpansion, managed map[string]bool, err error)

// maxAge is how long a view serves: as long as the workers had stayed
// unchanged when it was read, at least the resync and at most quietMax.
// With reads one resync apart that doubles the interval from one read to
// the next (30s, 30s, 60s, 120s at the defaults). Any change on the
// workers (a task failing, a worker leaving, a connector made through
// REST) makes the next read's view live one resync again, and any action
// of the operator forces a new read (the marks above). A burst of reads
// (passes retrying soon) does not stretch it: only time does.
func (cv *clusterView) maxAge(resync, quietMax time.Duration) time.Duration {
	return max(resync, min(cv.at.Sub(cv.since), quietMax))
}

// sinceAfter says since when the workers were as cv found them, given the
// read before it.
func sinceAfter(prev, cv *clusterView) time.Time {
	if prev == nil || prev.of != cv.of || cv.err != nil {
		return cv.at
	}
	select {
	case <-prev.done:
	default:
		return cv.at
	}
	if prev.err != nil || !reflect.DeepEqual(prev.entries, cv.entries) {
		return cv.at
	}
	return prev.since
}

// viewOf says which cluster a view read: a change of the cluster's spec
// (its generation) or a new cluster of the same name starts afresh, the new
// read replacing the old one.
func viewOf(cc *v1alpha1.ConnectCluster) string {
	return fmt.Sprintf("%s/%d", cc.UID, cc.Generation)
}

// markActed records that the connector's action just ended.
func (v *clusterViews) markActed(connector string) {
	v.acted.Store(connector, v.seq.Add(1))
}

// viewAge bounds how old a view may be when it serves: resync stretched up
// to quietMax while the workers stay unchanged (clusterView.maxAge).
type viewAge struct{ resync, quietMax time.Duration }

// entry returns the connector's entry in a view of its cluster that the
// pass may use, reading the cluster again when the kept view is too old
// or older than the connector's last action (concurrent passes share one
// read). ok is false when there is no usable view or the connector is not
// in it (the caller then asks the workers directly).
func (v *clusterViews) entry(ctx context.Context, cc *v1alpha1.ConnectCluster, read viewRead, connector, name string, age viewAge, now time.Time) (connectapi.ConnectorExpansion, bool) {
	// Newer than the connector's last action, and than its previous pass
	// when that was less than a quarter resync ago: a pass that retries soon
	// (tasks still starting) sees a new read, not the one its previous
	// pass saw, while resync passes share one read per resync.
	after := uint64(0)
	if a, ok := v.acted.Load(connector); ok {
		after = a.(uint64)
	}
	if p, ok := v.passed.Swap(connector, passMark{seq: v.seq.Add(1), at: now}); ok {
		if pm := p.(passMark); now.Sub(pm.at) < age.resync/4 {
			after = max(after, pm.seq)
		}
	}
	cv := v.view(ctx, cc, read, after, age, now)
	if cv == nil || cv.err != nil {
		return connectapi.ConnectorExpansion{}, false
	}
	e, ok := cv.entries[name]
	return e, ok && e.Status != nil
}

// view returns a view of cc started after the counter value after and
// young enough for age, waiting for one in flight or sending a new read
// (which replaces the kept one). nil when ctx ended while waiting.
func (v *clusterViews) view(ctx context.Context, cc *v1alpha1.ConnectCluster, read viewRead, after uint64, age viewAge, now time.Time) *clusterView {
	key, of := cc.Namespace+"/"+cc.Name, viewOf(cc)
	v.mu.Lock()
	if v.views == nil {
		v.views = map[string]*clusterView{}
	}
	cv := v.views[key]
	usable := func(cv *clusterView) bool {
		if cv == nil || cv.of != of || cv.seq <= after {
			return false
		}
		select {
		case <-cv.done:
			return cv.err == nil && now.Sub(cv.at) < cv.maxAge(age.resync, age.quietMax)
		default:
			return true // in flight, started after the action: wait for it
		}
	}
	if !usable(cv) {
		prev := cv
		cv = &clusterView{of: of, seq: v.seq.Add(1), at: now, done: make(chan struct{})}
		v.views[key] = cv
		v.mu.Unlock()
		cv.entries, cv.managed, cv.err = read(ctx)
		cv.since = sinceAfter(prev, cv)
		close(cv.done)
		return cv
	}
	v.mu.Unlock()
	select {
	case <-cv.done:
		return cv
	case <-ctx.Done():
		return nil
	}
}

// entries counts what is kept, by cache.
func (v *clusterViews) entries() map[string]int {
	v.mu.Lock()
	out := map[string]int{"views": len(v.views)}
	v.mu.Unlock()
	out["acted"], out["passed"], out["left"] = statusmetrics.SyncMapLen(&v.acted), statusmetrics.SyncMapLen(&v.passed), statusmetrics.SyncMapLen(&v.left)
	return out
}
