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

package rest

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/conveyor-dev/conveyor/runtime/clientconfig"
	"github.com/conveyor-dev/conveyor/runtime/connectapi"
)

// reply is what an API handler answers: a status and an optional JSON body.
type reply struct {
	status   int
	body     any // nil: no body
	location string
}

// apiFunc handles one API route. body is the request body, already read
// (bounded) for methods that carry one.
type apiFunc func(ctx context.Context, r *http.Request, body []byte) (reply, error)

// routes registers every path. Writes are marked so that a follower
// forwards them to the leader.
func (s *Server) routes() {
	read := func(pattern string, f apiFunc) { s.mux.Handle(pattern, s.api(f, false)) }
	write := func(pattern string, f apiFunc) { s.mux.Handle(pattern, s.api(f, true)) }

	read("GET /{$}", s.serverInfo)
	s.mux.HandleFunc("GET /health", s.health)
	s.mux.HandleFunc("GET /readyz", s.readyz)
	if s.cfg.Gatherer != nil {
		s.mux.Handle("GET /metrics", s.metricsHandler())
	}

	for _, base := range []string{"/connectors", "/connectors/{$}"} {
		read("GET "+base, s.listConnectors)
		write("POST "+base, s.createConnector)
	}
	read("GET /connectors/{c}", s.getConnector)
	write("DELETE /connectors/{c}", s.deleteConnector)
	read("GET /connectors/{c}/config", s.getConfig)
	write("PUT /connectors/{c}/config", s.putConfig)
	write("PATCH /connectors/{c}/config", s.patchConfig)
	read("GET /connectors/{c}/status", s.getStatus)
	read("GET /connectors/{c}/tasks", s.getTasks)
	// Internal: a follower sends the task configs its connector generated
	// to the leader (Kafka Connect's internal task-config request).
	write("PUT /connectors/{c}/tasks", s.putTaskConfigs)
	write("POST /connectors/{c}/tasks", s.putTaskConfigs)
	read("GET /connectors/{c}/tasks/{t}/status", s.getTaskStatus)
	write("POST /connectors/{c}/tasks/{t}/restart", s.restartTask)
	write("POST /connectors/{c}/restart", s.restartConnector)
	write("PUT /connectors/{c}/pause", s.pause)
	write("PUT /connectors/{c}/resume", s.resume)
	write("PUT /connectors/{c}/stop", s.stop)
	read("GET /connectors/{c}/offsets", s.getOffsets)
	write("PATCH /connectors/{c}/offsets", s.alterOffsets)
	write("DELETE /connectors/{c}/offsets", s.resetOffsets)
	read("GET /connectors/{c}/topics", s.getTopics)
	write("PUT /connectors/{c}/topics/reset", s.resetTopics)
	read("GET /connectors/{c}/limits", s.getLimits)

	for _, base := range []string{"/connector-plugins", "/connector-plugins/{$}"} {
		read("GET "+base, s.listPlugins)
	}
	read("GET /connector-plugins/{p}/config", s.pluginConfig)
	// Validation changes nothing, so it is served locally like a read.
	read("PUT /connector-plugins/{p}/config/validate", s.validate)
}

// api adapts an apiFunc: it reads the body, forwards writes to the leader
// when this worker is a follower, bounds the herder call, and writes the
// reply or the error in Kafka's shape.
func (s *Server) api(f apiFunc, isWrite bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body []byte
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			var err error
			if body, err = readBody(r, s.cfg.MaxBodyBytes); err != nil {
				s.writeErr(w, err)
				return
			}
		}
		if s.cfg.SessionKeys != nil && needsSignature(r) {
			_, keys, ok := s.cfg.SessionKeys()
			err := errNoSessionKey
			if ok {
				err = verifySignature(r, body, keys, time.Now())
			}
			if err != nil {
				s.log.Warn("refused a worker-to-worker request", "method", r.Method, "path", r.URL.Path, "remote", r.RemoteAddr, "reason", err.Error())
				writeError(w, http.StatusForbidden, "Refused a request that claims to come from a worker of this cluster: "+err.Error())
				return
			}
		}
		if isWrite && !s.herder.IsLeader() {
			s.forward(w, r, body, s.herder.LeaderURL())
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), s.cfg.RequestTimeout)
		defer cancel()
		rep, err := f(ctx, r, body)
		if err != nil {
			var nl *connectapi.NotLeaderError
			if isWrite && errors.As(err, &nl) {
				s.forward(w, r, body, nl.LeaderURL)
				return
			}
			if errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil {
				writeError(w, http.StatusInternalServerError, "Request timed out")
				return
			}
			s.writeErr(w, err)
			return
		}
		if rep.location != "" {
			w.Header().Set("Location", rep.location)
		}
		if rep.body == nil {
			w.WriteHeader(rep.status)
			return
		}
		writeJSON(w, rep.status, rep.body)
	})
}

// writeErr answers an error in Kafka's shape with the status it carries.
func (s *Server) writeErr(w http.ResponseWriter, err error) {
	code := connectapi.StatusCode(err)
	if code == http.StatusInternalServerError && clientconfig.IsRefused(err) {
		// The broker refused the connector's principal (an ACL or its
		// login): the request is not allowed, and retrying changes nothing.
		code = http.StatusForbidden
	}
	msg := err.Error()
	var nl *connectapi.NotLeaderError
	if errors.As(err, &nl) {
		msg = connectapi.MessageNoLeader
	}
	if code >= 500 {
		s.log.Error("REST request failed", "error", err)
	}
	writeError(w, code, msg)
}

func ok(v any) (reply, error) { return reply{status: http.StatusOK, body: v}, nil }

func status(code int) (reply, error) { return reply{status: code}, nil }

// connectorLocation is the Location of a created connector.
func connectorLocation(name string) string { return "/connectors/" + url.PathEscape(name) }

func (s *Server) serverInfo(ctx context.Context, _ *http.Request, _ []byte) (reply, error) {
	info, err := s.herder.ServerInfo(ctx)
	if err != nil {
		return reply{}, err
	}
	return ok(info)
}

// HealthStatus is the body of /health and /readyz.
type HealthStatus struct {
	Status  string `json:"status"`
	Message string `json:"message"`
}

// health is liveness: the process is up and serving.
func (s *Server) health(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, HealthStatus{Status: "healthy", Message: "The worker process is up."})
}

// readyz is readiness: the herder joined its group and read the config topic.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.RequestTimeout)
	defer cancel()
	if err := s.herder.Ready(ctx); err != nil {
		writeJSON(w, http.StatusServiceUnavailable, HealthStatus{Status: "starting", Message: err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, HealthStatus{Status: "ready", Message: "The worker has joined its group and read its configuration."})
}

// createBody is POST /connectors's body, decoded loosely enough to take
// numbers and booleans as config strings.
type createBody struct {
	Name         *string                    `json:"name"`
	Config       map[string]json.RawMessage `json:"config"`
	InitialState *string                    `json:"initial_state"`
}

const createWhat = `{"name": "...", "config": {...}, "initial_state": "RUNNING|PAUSED|STOPPED"}`

func (s *Server) createConnector(ctx context.Context, _ *http.Request, body []byte) (reply, error) {
	var b createBody
	if err := decodeStrict(body, &b, createWhat); err != nil {
		return reply{}, err
	}
	req := connectapi.CreateConnectorRequest{}
	if b.Name != nil {
		req.Name = strings.TrimSpace(*b.Name)
	}
	if req.Name == "" {
		return reply{}, connectapi.BadRequestf("Connector name is required: set \"name\" in the request body")
	}
	if b.Config == nil {
		return reply{}, connectapi.BadRequestf("Connector config is required: set \"config\" in the request body")
	}
	cfg, err := configValues(b.Config, createWhat)
	if err != nil {
		return reply{}, err
	}
	if err := checkConfigName(req.Name, cfg); err != nil {
		return reply{}, err
	}
	req.Config = cfg
	if b.InitialState != nil {
		st, err := connectapi.ParseInitialState(*b.InitialState)
		if err != nil {
			return reply{}, connectapi.BadRequestf("%s", err.Error())
		}
		req.InitialState = st
	}
	info, err := s.herder.CreateConnector(ctx, req)
	if err != nil {
		return reply{}, err
	}
	return reply{status: http.StatusCreated, body: info, location: connectorLocation(req.Name)}, nil
}

// checkConfigName makes cfg["name"] the connector's name, refusing a
// different one (Kafka's message).
func checkConfigName(name string, cfg map[string]string) error {
	if included, ok := cfg["name"]; ok {
		if included != name {
			return connectapi.BadRequestf("Connector name configuration (%s) doesn't match connector name in the URL (%s)", shorten(included), name)
		}
		return nil
	}
	cfg["name"] = name
	return nil
}

func (s *Server) getConnector(ctx context.Context, r *http.Request, _ []byte) (reply, error) {
	info, err := s.herder.ConnectorInfo(ctx, r.PathValue("c"))
	if err != nil {
		return reply{}, err
	}
	return ok(info)
}

func (s *Server) deleteConnector(ctx context.Context, r *http.Request, _ []byte) (reply, error) {
	if err := s.herder.DeleteConnector(ctx, r.PathValue("c")); err != nil {
		return reply{}, err
	}
	return status(http.StatusNoContent)
}

func (s *Server) getConfig(ctx context.Context, r *http.Request, _ []byte) (reply, error) {
	cfg, err := s.herder.ConnectorConfig(ctx, r.PathValue("c"))
	if err != nil {
		return reply{}, err
	}
	if cfg == nil {
		cfg = map[string]string{}
	}
	return ok(cfg)
}

func (s *Server) putConfig(ctx context.Context, r *http.Request, body []byte) (reply, error) {
	name := r.PathValue("c")
	cfg, err := decodeConfig(body, "the connector config as a JSON object of strings")
	if err != nil {
		return reply{}, err
	}
	if err := checkConfigName(name, cfg); err != nil {
		return reply{}, err
	}
	info, created, err := s.herder.PutConnectorConfig(ctx, name, cfg)
	if err != nil {
		return reply{}, err
	}
	if created {
		return reply{status: http.StatusCreated, body: info, location: connectorLocation(name)}, nil
	}
	return ok(info)
}

func (s *Server) patchConfig(ctx context.Context, r *http.Request, body []byte) (reply, error) {
	name := r.PathValue("c")
	patch, err := decodePatch(body)
	if err != nil {
		return reply{}, err
	}
	if v, has := patch["name"]; has {
		if v == nil {
			return reply{}, connectapi.BadRequestf("Connector name configuration cannot be removed")
		}
		if *v != name {
			return reply{}, connectapi.BadRequestf("Connector name configuration (%s) doesn't match connector name in the URL (%s)", shorten(*v), name)
		}
	}
	info, err := s.herder.PatchConnectorConfig(ctx, name, patch)
	if err != nil {
		return reply{}, err
	}
	return ok(info)
}

func (s *Server) getStatus(ctx context.Context, r *http.Request, _ []byte) (reply, error) {
	st, err := s.herder.ConnectorStatus(ctx, r.PathValue("c"))
	if err != nil {
		return reply{}, err
	}
	return ok(st)
}

func (s *Server) getTasks(ctx context.Context, r *http.Request, _ []byte) (reply, error) {
	tasks, err := s.herder.TaskConfigs(ctx, r.PathValue("c"))
	if err != nil {
		return reply{}, err
	}
	if tasks == nil {
		tasks = []connectapi.TaskInfo{}
	}
	return ok(tasks)
}

// TaskConfigWriter is implemented by herders that take task configs
// generated on a follower (the internal PUT /connectors/{c}/tasks).
type TaskConfigWriter interface {
	PutTaskConfigs(ctx context.Context, connector string, cfgs []map[string]string) error
}

func (s *Server) putTaskConfigs(ctx context.Context, r *http.Request, body []byte) (reply, error) {
	tw, ok := s.herder.(TaskConfigWriter)
	if !ok {
		return reply{}, connectapi.NotFoundf("This worker does not take task configs from other workers")
	}
	const what = "a JSON array of task configs (objects of strings)"
	var raw []map[string]json.RawMessage
	if err := decodeStrict(body, &raw, what); err != nil {
		return reply{}, err
	}
	cfgs := make([]map[string]string, len(raw))
	for i, c := range raw {
		cfg, err := configValues(c, what)
		if err != nil {
			return reply{}, err
		}
		cfgs[i] = cfg
	}
	if err := tw.PutTaskConfigs(ctx, r.PathValue("c"), cfgs); err != nil {
		return reply{}, err
	}
	return status(http.StatusNoContent)
}

// taskID parses {c} and {t}; a task that is not a number does not exist
// (404, as in Kafka).
func taskID(r *http.Request) (connectapi.ConnectorTaskID, error) {
	id := connectapi.ConnectorTaskID{Connector: r.PathValue("c")}
	t, err := strconv.Atoi(r.PathValue("t"))
	if err != nil || t < 0 {
		return id, connectapi.NotFoundf("Task %s of connector %s not found: a task id is a number from 0", shorten(r.PathValue("t")), id.Connector)
	}
	id.Task = t
	return id, nil
}

func (s *Server) getTaskStatus(ctx context.Context, r *http.Request, _ []byte) (reply, error) {
	id, err := taskID(r)
	if err != nil {
		return reply{}, err
	}
	st, err := s.herder.TaskStatus(ctx, id)
	if err != nil {
		return reply{}, err
	}
	return ok(st)
}

func (s *Server) restartTask(ctx context.Context, r *http.Request, _ []byte) (reply, error) {
	id, err := taskID(r)
	if err != nil {
		return reply{}, err
	}
	if err := s.herder.RestartTask(ctx, id); err != nil {
		return reply{}, err
	}
	return status(http.StatusNoContent)
}

// boolParam reads a query flag as JAX-RS does: "true" in any case is true,
// anything else false; absent is def.
func boolParam(r *http.Request, name string, def bool) bool {
	vs, has := r.URL.Query()[name]
	if !has || len(vs) == 0 {
		return def
	}
	return strings.EqualFold(vs[0], "true")
}

func (s *Server) restartConnector(ctx context.Context, r *http.Request, _ []byte) (reply, error) {
	includeTasks := boolParam(r, "includeTasks", false)
	onlyFailed := boolParam(r, "onlyFailed", false)
	st, err := s.herder.RestartConnector(ctx, r.PathValue("c"), includeTasks, onlyFailed)
	if err != nil {
		return reply{}, err
	}
	if !includeTasks && !onlyFailed {
		return status(http.StatusNoContent)
	}
	if st == nil {
		return reply{}, errors.New("herder returned no status for a restart with includeTasks or onlyFailed")
	}
	return reply{status: http.StatusAccepted, body: *st}, nil
}

func (s *Server) pause(ctx context.Context, r *http.Request, _ []byte) (reply, error) {
	if err := s.herder.Pause(ctx, r.PathValue("c")); err != nil {
		return reply{}, err
	}
	return status(http.StatusAccepted)
}

func (s *Server) resume(ctx context.Context, r *http.Request, _ []byte) (reply, error) {
	if err := s.herder.Resume(ctx, r.PathValue("c")); err != nil {
		return reply{}, err
	}
	return status(http.StatusAccepted)
}

func (s *Server) stop(ctx context.Context, r *http.Request, _ []byte) (reply, error) {
	if err := s.herder.Stop(ctx, r.PathValue("c")); err != nil {
		return reply{}, err
	}
	return status(http.StatusNoContent)
}

func (s *Server) getOffsets(ctx context.Context, r *http.Request, _ []byte) (reply, error) {
	offs, err := s.herder.Offsets(ctx, r.PathValue("c"))
	if err != nil {
		return reply{}, err
	}
	return ok(offs)
}

func (s *Server) alterOffsets(ctx context.Context, r *http.Request, body []byte) (reply, error) {
	var offs connectapi.ConnectorOffsets
	if err := decodeStrict(body, &offs, `{"offsets": [{"partition": {...}, "offset": {...}}]}`); err != nil {
		return reply{}, err
	}
	if len(offs.Offsets) == 0 {
		return reply{}, connectapi.BadRequestf("Partitions / offsets need to be provided for an alter offsets request")
	}
	for i, o := range offs.Offsets {
		if o.Partition == nil {
			return reply{}, connectapi.BadRequestf("Offsets entry %d has no \"partition\": every entry needs one", i)
		}
	}
	msg, err := s.herder.AlterOffsets(ctx, r.PathValue("c"), offs)
	if err != nil {
		return reply{}, err
	}
	return ok(msg)
}

func (s *Server) resetOffsets(ctx context.Context, r *http.Request, _ []byte) (reply, error) {
	msg, err := s.herder.ResetOffsets(ctx, r.PathValue("c"))
	if err != nil {
		return reply{}, err
	}
	return ok(msg)
}

func (s *Server) getTopics(ctx context.Context, r *http.Request, _ []byte) (reply, error) {
	name := r.PathValue("c")
	info, err := s.herder.ActiveTopics(ctx, name)
	if err != nil {
		return reply{}, err
	}
	return ok(map[string]connectapi.ActiveTopicsInfo{name: info})
}

func (s *Server) resetTopics(ctx context.Context, r *http.Request, _ []byte) (reply, error) {
	if err := s.herder.ResetActiveTopics(ctx, r.PathValue("c")); err != nil {
		return reply{}, err
	}
	return status(http.StatusAccepted)
}

func (s *Server) getLimits(ctx context.Context, r *http.Request, _ []byte) (reply, error) {
	l, err := s.herder.Limits(ctx, r.PathValue("c"))
	if err != nil {
		return reply{}, err
	}
	return ok(l)
}

func (s *Server) listPlugins(ctx context.Context, r *http.Request, _ []byte) (reply, error) {
	plugins, err := s.herder.Plugins(ctx, boolParam(r, "connectorsOnly", true))
	if err != nil {
		return reply{}, err
	}
	if plugins == nil {
		plugins = []connectapi.PluginInfo{}
	}
	return ok(plugins)
}

func (s *Server) pluginConfig(ctx context.Context, r *http.Request, _ []byte) (reply, error) {
	keys, err := s.herder.PluginConfig(ctx, r.PathValue("p"))
	if err != nil {
		return reply{}, err
	}
	if keys == nil {
		keys = []connectapi.ConfigKeyInfo{}
	}
	return ok(keys)
}

// normalizedPluginName drops a "Connector" suffix, so that an alias such as
// "FileStreamSink" matches "FileStreamSinkConnector" (Kafka's rule).
func normalizedPluginName(name string) string {
	return strings.TrimSuffix(name, "Connector")
}

func (s *Server) validate(ctx context.Context, r *http.Request, body []byte) (reply, error) {
	plugin := r.PathValue("p")
	cfg, err := decodeConfig(body, "the connector config as a JSON object of strings")
	if err != nil {
		return reply{}, err
	}
	if included := cfg["connector.class"]; included != "" &&
		!strings.HasSuffix(normalizedPluginName(included), normalizedPluginName(plugin)) {
		return reply{}, connectapi.BadRequestf("Included connector type %s does not match request type %s", shorten(included), plugin)
	}
	infos, err := s.herder.ValidateConfig(ctx, plugin, cfg)
	if err != nil {
		return reply{}, err
	}
	return ok(infos)
}
