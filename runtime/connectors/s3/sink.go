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

// Package s3 holds S3Sink, a connector that writes records into objects
// of an S3 bucket, one series of objects per topic partition:
// topics.dir/topic/partition=N/topic+N+startOffset.json(.gz), .bin or
// .snappy.parquet (format.class=parquet, see parquet.go). An object
// ends after flush.size records, when a record's timestamp is
// rotate.interval.ms past the object's first, or when the value schema
// changes; it is uploaded whole (multipart when large) and only then are
// its records' offsets committed. Names and contents depend only on the
// records, so a redelivery after a crash writes the same objects again:
// exactly-once objects, as Confluent's S3 sink gives them.
package s3

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/conveyor-dev/conveyor/runtime/plugin"
)

// Version of the sink.
const Version = "0.1.0"

// Class is the connector class name.
const Class = "dev.conveyor.connect.s3.S3SinkConnector"

// Configuration keys (Confluent's S3 sink names where it has them).
const (
	KeyBucket         = "s3.bucket.name"
	KeyRegion         = "s3.region"
	KeyStoreURL       = "store.url"
	KeyAccessKey      = "aws.access.key.id"
	KeySecretKey      = "aws.secret.access.key"
	KeyPathStyle      = "s3.path.style.access.enabled"
	KeyTopicsDir      = "topics.dir"
	KeyFlushSize      = "flush.size"
	KeyRotateInterval = "rotate.interval.ms"
	KeyRotateSchedule = "rotate.schedule.interval.ms"
	KeyFormat         = "format.class"
	KeyCompression    = "s3.compression.type"
	KeyPartSize       = "s3.part.size"
	KeyNullValues     = "behavior.on.null.values"
	KeyPartitioner    = "s3.partitioner"
	KeyPathFormat     = "path.format"
	KeyTimestampField = "timestamp.field"
	KeyParquetCodec   = "parquet.codec"
)

// Compression types, null-value behaviours and partitioners.
const (
	CompressionNone  = "none"
	CompressionGzip  = "gzip"
	NullIgnore       = "ignore"
	NullWrite        = "write"
	NullFail         = "fail"
	FormatJSON       = "json"
	FormatBytes      = "bytes"
	FormatParquet    = "parquet"
	PartitionerKafka = "default"
	PartitionerTime  = "time"
)

const group = "S3"

// Plugin returns the S3Sink plugin.
func Plugin() plugin.Plugin {
	fields := []plugin.ConfigField{
		{Name: KeyBucket, Type: plugin.TypeString, Required: true, Group: group, Importance: plugin.ImportanceHigh, Width: plugin.WidthMedium,
			DisplayName: "Bucket", Validator: plugin.NonEmpty(), Doc: "The bucket the objects are written to; it must exist."},
		{Name: KeyRegion, Type: plugin.TypeString, Default: "us-east-1", Group: group, Importance: plugin.ImportanceMedium, Width: plugin.WidthShort,
			DisplayName: "Region", Doc: "The bucket's region."},
		{Name: KeyStoreURL, Type: plugin.TypeString, Default: "", Group: group, Importance: plugin.ImportanceHigh, Width: plugin.WidthLong,
			DisplayName: "Store URL", Doc: "The S3 endpoint, for example http://minio.storage:9000 (https:// for TLS); empty for AWS S3."},
		{Name: KeyAccessKey, Type: plugin.TypeString, Group: group, Importance: plugin.ImportanceHigh, Width: plugin.WidthMedium,
			DisplayName: "Access key", Doc: "Access key id; with aws.secret.access.key. Empty: the AWS environment variables, then the instance's IAM role, on clusters whose owner allows ambient cloud credentials."},
		{Name: KeySecretKey, Type: plugin.TypePassword, Group: group, Importance: plugin.ImportanceHigh, Width: plugin.WidthMedium,
			DisplayName: "Secret key", Doc: "Secret access key, usually a ${secret:<name>:<key>} placeholder. Never logged."},
		{Name: KeyPathStyle, Type: plugin.TypeBoolean, Default: "true", Group: group, Importance: plugin.ImportanceLow, Width: plugin.WidthShort,
			DisplayName: "Path-style access", Doc: "Address the bucket in the path (endpoint/bucket/key), as most S3-compatible servers need; false: as a host name (bucket.endpoint)."},
		{Name: KeyTopicsDir, Type: plugin.TypeString, Default: "topics", Group: group, Importance: plugin.ImportanceMedium, Width: plugin.WidthMedium,
			DisplayName: "Topics directory", Doc: "The prefix of every object name: topics.dir/topic/partition=N/topic+N+startOffset.json; empty for none."},
		{Name: KeyFlushSize, Type: plugin.TypeInt, Default: "1000", Group: group, Importance: plugin.ImportanceHigh, Width: plugin.WidthShort,
			DisplayName: "Flush size", Validator: plugin.AtLeast(1), Max: 1_000_000,
			Doc: "Records per object: an object is uploaded once it holds this many. Offsets are committed only for uploaded objects, so up to flush.size records per partition wait in memory."},
		{Name: KeyRotateInterval, Type: plugin.TypeLong, Default: "-1", Group: group, Importance: plugin.ImportanceMedium, Width: plugin.WidthShort,
			DisplayName: "Rotate interval (ms)", Validator: plugin.AtLeast(-1), Max: 365 * 24 * 3600 * 1000,
			Doc: "An object also ends when a record's timestamp is this many ms after its first record's (the new record starts the next object); -1: off. It uses record timestamps, so object names stay deterministic."},
		{Name: KeyRotateSchedule, Type: plugin.TypeLong, Default: "-1", Group: group, Importance: plugin.ImportanceMedium, Width: plugin.WidthShort,
			DisplayName: "Scheduled rotate interval (ms)", Validator: plugin.AtLeast(-1), Max: 365 * 24 * 3600 * 1000,
			Doc: "Upload an object that has been open this many ms of wall-clock time at the next offset commit, so a trickle of records is not held back; -1: off. Object boundaries then depend on timing: after a crash a redelivery may cut objects elsewhere (at-least-once records, not exactly-once objects)."},
		{Name: KeyFormat, Type: plugin.TypeString, Default: FormatJSON, Group: group, Importance: plugin.ImportanceHigh, Width: plugin.WidthShort,
			DisplayName: "Format", Validator: plugin.OneOf(FormatJSON, FormatBytes, FormatParquet, confluentJSON, confluentBytes, confluentParquet), Recommended: []string{FormatJSON, FormatBytes, FormatParquet},
			Doc: "json: one JSON value per line (.json), as JsonConverter writes payloads; bytes: the value's bytes as they are, one per line (.bin), for a ByteArrayConverter or StringConverter value that is JSON or text already, written without being parsed; parquet: one Parquet file per object (.snappy.parquet with the default parquet.codec), its columns from the value schema, so the values need one (JsonConverter with schemas.enable=true, or a schema registry converter). Confluent's JsonFormat, ByteArrayFormat and ParquetFormat class names work too."},
		{Name: KeyCompression, Type: plugin.TypeString, Default: CompressionNone, Group: group, Importance: plugin.ImportanceMedium, Width: plugin.WidthShort,
			DisplayName: "Compression", Validator: plugin.OneOf(CompressionNone, CompressionGzip), Recommended: []string{CompressionNone, CompressionGzip},
			Doc: "none: .json objects; gzip: .json.gz objects. format.class=parquet compresses inside the file instead: see parquet.codec."},
		{Name: KeyParquetCodec, Type: plugin.TypeString, Default: CodecSnappy, Group: group, Importance: plugin.ImportanceMedium, Width: plugin.WidthShort,
			DisplayName: "Parquet codec", Validator: plugin.OneOf(CodecNone, CodecSnappy, CodecGzip, CodecZstd, CodecLZ4, CodecBrotli),
			Recommended: []string{CodecNone, CodecSnappy, CodecGzip, CodecZstd, CodecLZ4, CodecBrotli},
			Doc:         "format.class=parquet: the compression of the file's pages: none, snappy, gzip, zstd, lz4 (LZ4_RAW) or brotli. The object name says it: .snappy.parquet, .gz.parquet, .zstd.parquet, .lz4raw.parquet, .br.parquet, .parquet."},
		{Name: KeyPartSize, Type: plugin.TypeInt, Default: "26214400", Group: group, Importance: plugin.ImportanceLow, Width: plugin.WidthShort,
			DisplayName: "Part size", Validator: plugin.AtLeast(5 << 20), Max: 1 << 30,
			Doc: "Objects larger than this are uploaded in parts of this size (multipart upload); at least 5 MiB."},
		{Name: KeyNullValues, Type: plugin.TypeString, Default: NullIgnore, Group: group, Importance: plugin.ImportanceMedium, Width: plugin.WidthShort,
			DisplayName: "Behavior on null values", Validator: plugin.OneOf(NullIgnore, NullWrite, NullFail), Recommended: []string{NullIgnore, NullWrite, NullFail},
			Doc: "What a tombstone (null value) does: ignore it; write it as a null line (a delete marker for whoever reads the objects); or fail it as a bad record (errors.tolerance and the dead letter queue apply)."},
		{Name: KeyPartitioner, Type: plugin.TypeString, Default: PartitionerKafka, Group: group, Importance: plugin.ImportanceMedium, Width: plugin.WidthShort,
			DisplayName: "Partitioner", Validator: plugin.OneOf(PartitionerKafka, PartitionerTime), Recommended: []string{PartitionerKafka, PartitionerTime},
			Doc: "default: topic/partition=N/; time: topic/<path.format of the record's time>/, the time being the record timestamp or timestamp.field (an object ends when the path changes)."},
		{Name: KeyPathFormat, Type: plugin.TypeString, Default: "year=${yyyy}/month=${MM}/day=${dd}/hour=${HH}", Group: group, Importance: plugin.ImportanceLow, Width: plugin.WidthLong,
			DisplayName: "Path format", Doc: "s3.partitioner=time: the path of a record's time (UTC), with ${yyyy}, ${MM}, ${dd}, ${HH}, ${mm} replaced."},
		{Name: KeyTimestampField, Type: plugin.TypeString, Default: "", Group: group, Importance: plugin.ImportanceLow, Width: plugin.WidthMedium,
			DisplayName: "Timestamp field", Doc: "s3.partitioner=time: the value field holding the time (a Timestamp, or epoch milliseconds); empty: the record timestamp."},
	}
	return plugin.Plugin{
		Class:   Class,
		Kind:    plugin.KindSink,
		Version: Version,
		Doc:     "Writes records into S3 objects per topic partition (JSON lines, optionally gzip; raw bytes; Parquet), uploaded whole before their offsets are committed; deterministic object names.",
		Spec:    plugin.ConfigSpec{Fields: fields},
		NewConnector: func() plugin.Connector {
			return &connector{plugin.PartitionSinkConnector{Fallback: KeyBucket, Parse: func(c map[string]string) error { _, err := parse(c); return err }, Check: check}}
		},
		NewSinkTask: func() plugin.SinkTask { return &Task{} },
	}
}

// Confluent's format class names, accepted for their formats.
const (
	confluentJSON    = "io.confluent.connect.s3.format.json.JsonFormat"
	confluentBytes   = "io.confluent.connect.s3.format.bytearray.ByteArrayFormat"
	confluentParquet = "io.confluent.connect.s3.format.parquet.ParquetFormat"
)

// formatOf resolves Confluent's format class names to the sink's.
func formatOf(name string) string {
	switch name {
	case confluentJSON:
		return FormatJSON
	case confluentBytes:
		return FormatBytes
	case confluentParquet:
		return FormatParquet
	}
	return name
}

type settings struct {
	format         string // FormatJSON, FormatBytes or FormatParquet (Confluent's names resolved)
	codec          string // parquet.codec
	bucket         string
	endpoint       string
	opts           *minio.Options
	topicsDir      string
	flushSize      int
	rotate         time.Duration // by record timestamps; 0: off
	schedule       time.Duration // by wall clock; 0: off
	gzip           bool
	partSize       uint64
	nulls          string
	timePartition  bool
	pathFormat     string
	timestampField string
	// ambient: no keys in the config, so the credentials come from the
	// worker's environment and cloud role, if the cluster allows it.
	ambient bool
}

// checkAmbient refuses ambient credentials where ctx does not allow them,
// naming the key to set instead.
func (s *settings) checkAmbient(ctx context.Context) error {
	if s.ambient && !plugin.AmbientCredentialsAllowed(ctx) {
		return &plugin.ConfigError{Fields: []plugin.FieldError{{Name: KeyAccessKey, Message: KeyAccessKey + " and " + KeySecretKey + " are empty, and " + plugin.AmbientCredentialsHint}}}
	}
	return nil
}

func parse(config map[string]string) (*settings, error) {
	cfg, err := Plugin().Spec.Parse(config)
	if err != nil {
		return nil, err
	}
	fail := func(key, msg string) error {
		return &plugin.ConfigError{Fields: []plugin.FieldError{{Name: key, Message: msg}}}
	}
	s := &settings{
		bucket:         cfg.String(KeyBucket),
		topicsDir:      strings.Trim(cfg.String(KeyTopicsDir), "/"),
		flushSize:      cfg.Int(KeyFlushSize),
		format:         formatOf(cfg.String(KeyFormat)),
		codec:          cfg.String(KeyParquetCodec),
		gzip:           cfg.String(KeyCompression) == CompressionGzip,
		partSize:       uint64(cfg.Int(KeyPartSize)),
		nulls:          cfg.String(KeyNullValues),
		timePartition:  cfg.String(KeyPartitioner) == PartitionerTime,
		pathFormat:     strings.Trim(cfg.String(KeyPathFormat), "/"),
		timestampField: cfg.String(KeyTimestampField),
	}
	if ms := cfg.Long(KeyRotateInterval); ms > 0 {
		s.rotate = time.Duration(ms) * time.Millisecond
	}
	if ms := cfg.Long(KeyRotateSchedule); ms > 0 {
		s.schedule = time.Duration(ms) * time.Millisecond
	}
	secure := true
	s.endpoint = "s3.amazonaws.com"
	if raw := strings.TrimSpace(cfg.String(KeyStoreURL)); raw != "" {
		u, err := url.Parse(raw)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") || u.User != nil {
			return nil, fail(KeyStoreURL, "want http://host:port or https://host:port, without a path or credentials")
		}
		s.endpoint, secure = u.Host, u.Scheme == "https"
	}
	access, secret := cfg.String(KeyAccessKey), cfg.Password(KeySecretKey).Value()
	var creds *credentials.Credentials
	switch {
	case access != "" && secret != "":
		creds = credentials.NewStaticV4(access, secret, "")
	case access != "" || secret != "":
		return nil, fail(KeySecretKey, "set both aws.access.key.id and aws.secret.access.key, or neither (the environment and the IAM role then give the credentials)")
	default:
		creds = credentials.NewChainCredentials([]credentials.Provider{&credentials.EnvAWS{}, &credentials.IAM{}})
		s.ambient = true
	}
	lookup := minio.BucketLookupPath
	if !cfg.Bool(KeyPathStyle) {
		lookup = minio.BucketLookupDNS
	}
	s.opts = &minio.Options{Creds: creds, Secure: secure, Region: cfg.String(KeyRegion), BucketLookup: lookup, MaxRetries: 1}
	if s.format == FormatParquet && s.gzip {
		return nil, fail(KeyCompression, "format.class=parquet compresses inside the file: set parquet.codec (snappy, gzip, zstd, lz4, brotli) and leave s3.compression.type at none")
	}
	if s.format == FormatParquet && s.nulls == NullWrite {
		return nil, fail(KeyNullValues, "format.class=parquet has no row for a null value: use behavior.on.null.values=ignore or fail")
	}
	if s.timePartition && !strings.Contains(s.pathFormat, "${") {
		return nil, fail(KeyPathFormat, "s3.partitioner=time needs a path.format with at least one of ${yyyy}, ${MM}, ${dd}, ${HH}, ${mm}")
	}
	return s, nil
}

func (s *settings) client() (*minio.Client, error) {
	c, err := minio.New(s.endpoint, s.opts)
	if err != nil {
		return nil, fmt.Errorf("S3 client for %s: %w", s.endpoint, err)
	}
	return c, nil
}

// check looks the bucket up with the configured credentials.
func check(ctx context.Context, config map[string]string) []plugin.FieldError {
	s, err := parse(config)
	if err == nil {
		err = s.checkAmbient(ctx)
	}
	if err != nil {
		return plugin.AsFieldErrors(err, KeyBucket)
	}
	c, err := s.client()
	if err != nil {
		return []plugin.FieldError{{Name: KeyStoreURL, Message: err.Error()}}
	}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	// A listing, not HEAD: its error body names the reason.
	var err2 error
	lctx, stop := context.WithCancel(ctx)
	for o := range c.ListObjects(lctx, s.bucket, minio.ListObjectsOptions{MaxKeys: 1}) {
		err2 = o.Err
		break
	}
	stop()
	if err2 != nil {
		if errors.Is(err2, context.DeadlineExceeded) {
			return []plugin.FieldError{{Name: KeyStoreURL, Message: fmt.Sprintf("S3 at %s did not answer within 15s", s.endpoint)}}
		}
		key := KeyStoreURL
		switch minio.ToErrorResponse(err2).Code {
		case "NoSuchBucket":
			return []plugin.FieldError{{Name: KeyBucket, Message: fmt.Sprintf("bucket %q does not exist at %s: create it first", s.bucket, s.endpoint)}}
		case "InvalidAccessKeyId", "XAdminUserNotFound": // AWS, versitygw
			key = KeyAccessKey
		case "SignatureDoesNotMatch", "AccessDenied":
			key = KeySecretKey
		}
		return []plugin.FieldError{{Name: key, Message: fmt.Sprintf("listing bucket %q at %s: %v (%s)", s.bucket, s.endpoint, err2, minio.ToErrorResponse(err2).Code)}}
	}
	return nil
}

// connector is the connector: its tasks share the topics' partitions.
type connector struct{ plugin.PartitionSinkConnector }

// ToleratesShareGroup: no. An object holds a run of consecutive offsets of
// one partition and is named after its first one, so that a task
// restarted after a crash writes the same objects again (PreCommit
// acknowledges whole objects only); a share group hands one partition's
// records to many tasks, out of order, so no task holds such a run.
func (*connector) ToleratesShareGroup(map[string]string) (bool, string) {
	return false, "the S3 sink writes objects of consecutive offsets of one partition, named after the first, which a share group cannot give one task; use consumer.group.type=consumer"
}
