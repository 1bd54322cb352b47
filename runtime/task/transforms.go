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

package task

// The transformation stage of both runners: the connector's transforms
// (Common.Transforms, built into Common.chain), called only when the
// connector has some. A failure goes through the errors.* handling like a
// conversion failure (stage TRANSFORMATION): retried while retriable,
// skipped under errors.tolerance=all (a sink's record then goes to the
// dead letter queue), else it fails the task with the transform's alias
// and the record's position.

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/conveyor-dev/conveyor/runtime/plugin"
	"github.com/conveyor-dev/conveyor/runtime/transforms"
)

// transform applies the transforms to a polled record. It returns the
// record to convert (a new one: rec stays as the task returned it, for
// CommitRecord), nil when a transform dropped the record or it was skipped
// after failing, or the error that fails the task.
func (r *SourceRunner) transform(ctx context.Context, rec *plugin.SourceRecord, now time.Time) (*plugin.SourceRecord, error) {
	out, err := r.cfg.chain.ApplySource(rec, now)
	if err == nil {
		return out, nil
	}
	err = r.errs.handle(ctx, transformErr(err), func() error {
		var err error
		out, err = r.cfg.chain.ApplySource(rec, now)
		return transformErr(err)
	}, failedRecord{source: rec})
	switch err {
	case nil:
		return out, nil
	case errSkipped:
		return nil, nil
	}
	return nil, err
}

// transform applies the transforms to a converted record, in place, and
// reports whether it goes to the task: false when a transform dropped it
// or it was skipped after failing; an error fails the task.
func (r *SinkRunner) transform(ctx context.Context, kr *kgo.Record, rec *plugin.SinkRecord) (bool, error) {
	keep, err := r.cfg.chain.ApplySink(rec)
	if err == nil {
		return keep, nil
	}
	err = r.errs.handle(ctx, transformErr(err), func() error {
		var err error
		keep, err = r.cfg.chain.ApplySink(rec) // rec is written only on success
		return transformErr(err)
	}, failedRecord{kafka: kr})
	switch err {
	case nil:
		return keep, nil
	case errSkipped:
		return false, nil
	}
	return false, err
}

// transformErr marks a transform's failure as one of the transformation
// stage, for the errors.* handling; nil stays nil.
func transformErr(err error) error {
	if err == nil {
		return nil
	}
	class := "transform"
	var te *transforms.Error
	if errors.As(err, &te) && te.Type != "" {
		class = te.Type
	}
	return &StageError{Stage: StageTransformation, Class: class, Err: err}
}
