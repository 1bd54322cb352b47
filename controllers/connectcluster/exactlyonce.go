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

package connectcluster

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/conveyor-dev/conveyor/api/v1alpha1"
	"github.com/conveyor-dev/conveyor/controllers/clusterkit"
	"github.com/conveyor-dev/conveyor/runtime/connectnames"
)

// TransactionProber is implemented by a TopicAdmin that can check whether
// the principal may use a transactional id.
type TransactionProber interface {
	// ProbeTransactions initializes a transactional producer id for
	// transactionalID (InitProducerID), as a source task does when it
	// starts; an error says why Kafka refused.
	ProbeTransactions(ctx context.Context, transactionalID string) error
}

// ProbeTransactions implements TransactionProber.
func (a *kadmAdmin) ProbeTransactions(ctx context.Context, transactionalID string) error {
	req := kmsg.NewPtrInitProducerIDRequest()
	req.TransactionalID = &transactionalID
	req.TransactionTimeoutMillis = 60000
	req.ProducerID, req.ProducerEpoch = -1, -1
	resp, err := req.RequestWith(ctx, a.cl)
	if err != nil {
		return err
	}
	return kerr.ErrorForCode(resp.ErrorCode)
}

// ProbeTransactionalID is the transactional id the operator checks: of the
// cluster's group, as the workers' "<groupId>-<connector>-<task>" are, so a
// prefixed ACL on "<groupId>-" covers both.
func ProbeTransactionalID(cc *v1alpha1.ConnectCluster) string {
	return connectnames.TransactionalID(cc.GroupID(), "conveyor-operator-check", 0)
}

// eosOutcome is the ExactlyOnce condition of one loop.
type eosOutcome struct {
	status          metav1.ConditionStatus
	reason, message string
}

// ExactlyOnceCondition decides the ExactlyOnce condition from the worker
// mode and the result of the probe (nil: allowed).
func ExactlyOnceCondition(mode, groupID, probeID string, probe error) (metav1.ConditionStatus, string, string) {
	if mode != "enabled" && mode != "preparing" {
		return metav1.ConditionFalse, v1alpha1.ReasonExactlyOnceDisabled, "exactly-once sources are off: set spec.exactlyOnce to true to turn them on"
	}
	switch {
	case probe == nil:
		return metav1.ConditionTrue, v1alpha1.ReasonTransactionsAllowed,
			fmt.Sprintf("exactly.once.source.support=%s; the Kafka principal may use transactional ids of group %q (checked with %q)", mode, groupID, probeID)
	case errors.Is(probe, kerr.TransactionalIDAuthorizationFailed) || errors.Is(probe, kerr.ClusterAuthorizationFailed):
		return metav1.ConditionFalse, v1alpha1.ReasonTransactionsDenied,
			fmt.Sprintf("Kafka refused the principal the transactional id %q (%v): exactly-once source tasks will fail to start; grant WRITE and DESCRIBE on TransactionalId with the prefix %q (for example kafka-acls --add --allow-principal User:<user> --operation Write --operation Describe --transactional-id %s- --resource-pattern-type prefixed)",
				probeID, probe, groupID+"-", groupID)
	default:
		return metav1.ConditionUnknown, v1alpha1.ReasonTransactionsUnchecked, fmt.Sprintf("checking transactional id %q: %v; retrying", probeID, probe)
	}
}

// checkExactlyOnce probes the principal's right to use transactions when
// the cluster has exactly-once on, at most once per TopicRecheckInterval
// while nothing about it changes; a refusal or an error is checked again
// next loop.
func (r *Reconciler) checkExactlyOnce(ctx context.Context, cc *v1alpha1.ConnectCluster, conn clusterkit.KafkaConnection) eosOutcome {
	mode := cc.ExactlyOnceSourceSupport()
	id := ProbeTransactionalID(cc)
	if mode != "enabled" && mode != "preparing" {
		s, reason, msg := ExactlyOnceCondition(mode, cc.GroupID(), id, nil)
		return eosOutcome{s, reason, msg}
	}
	key := types.NamespacedName{Namespace: cc.Namespace, Name: cc.Name}
	tkey := topicsKey(cc, nil) + "\x00" + id
	now := r.opts.Clock.Now()
	r.mu.Lock()
	rec, ok := r.eosChecked[key]
	r.mu.Unlock()
	if ok && rec.uid == cc.UID && rec.key == tkey && now.Sub(rec.at) < r.opts.TopicRecheckInterval {
		s, reason, msg := ExactlyOnceCondition(mode, cc.GroupID(), id, nil)
		return eosOutcome{s, reason, msg}
	}
	ctx, cancel := context.WithTimeout(ctx, r.opts.KafkaTimeout)
	defer cancel()
	var err error
	admin, err := r.opts.AdminFactory(ctx, conn)
	if err == nil {
		defer admin.Close()
		p, ok := admin.(TransactionProber)
		if !ok {
			return eosOutcome{metav1.ConditionUnknown, v1alpha1.ReasonTransactionsUnchecked, "this operator's Kafka admin cannot check transactions"}
		}
		err = p.ProbeTransactions(ctx, id)
	}
	r.mu.Lock()
	if err == nil {
		r.eosChecked[key] = topicCheckRecord{uid: cc.UID, key: tkey, at: now}
	} else {
		delete(r.eosChecked, key)
	}
	r.mu.Unlock()
	s, reason, msg := ExactlyOnceCondition(mode, cc.GroupID(), id, err)
	return eosOutcome{s, reason, msg}
}
