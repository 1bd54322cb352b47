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

// Command podapp is the program the local cluster's tests run as a pod. It serves:
//
//	/healthz            200 (readiness and liveness)
//	/self               what the API server says about this pod, read with in-cluster config
//	/file?path=P        the content of file P (volumes, ServiceAccount token)
//	/env?name=N         the value of environment variable N
//	/write?path=P       tries to write file P (read-only root, emptyDir)
//
// On SIGTERM it writes "SIGTERM" to --marker-dir/<pod name> and exits 0.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Self is the /self answer.
type Self struct {
	PodName        string `json:"podName"`
	Namespace      string `json:"namespace"`
	UID            int    `json:"uid"`
	APIPodName     string `json:"apiPodName,omitempty"`
	APIPodIP       string `json:"apiPodIP,omitempty"`
	APIError       string `json:"apiError,omitempty"`
	SecretListCode int    `json:"secretListCode"`
}

func main() {
	listen := flag.String("listen", "", "address to serve on (default $POD_IP:8080)")
	exitCode := flag.Int("exit-code", -1, "exit at once with this code (>= 0)")
	markerDir := flag.String("marker-dir", "", "folder for the SIGTERM marker")
	flag.Parse()
	if *exitCode >= 0 {
		fmt.Printf("podapp: exiting with %d\n", *exitCode)
		os.Exit(*exitCode)
	}
	if *listen == "" {
		*listen = os.Getenv("POD_IP") + ":8080"
	}
	podName, _ := os.Hostname()
	if n := os.Getenv("POD_NAME"); n != "" {
		podName = n
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = fmt.Fprintln(w, "ok") })
	mux.HandleFunc("/self", func(w http.ResponseWriter, r *http.Request) {
		ns, _ := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
		s := Self{PodName: podName, Namespace: string(ns), UID: os.Getuid()}
		cfg, err := rest.InClusterConfig()
		if err == nil {
			var cs *kubernetes.Clientset
			cs, err = kubernetes.NewForConfig(cfg)
			if err == nil {
				pod, gerr := cs.CoreV1().Pods(s.Namespace).Get(r.Context(), podName, metav1.GetOptions{})
				err = gerr
				if gerr == nil {
					s.APIPodName, s.APIPodIP = pod.Name, pod.Status.PodIP
				}
				// RBAC is real: listing Secrets is not granted to this ServiceAccount.
				res := cs.CoreV1().RESTClient().Get().Namespace(s.Namespace).Resource("secrets").Do(r.Context())
				res.StatusCode(&s.SecretListCode)
			}
		}
		if err != nil {
			s.APIError = err.Error()
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(s)
	})
	mux.HandleFunc("/file", func(w http.ResponseWriter, r *http.Request) {
		b, err := os.ReadFile(r.URL.Query().Get("path"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusNotFound)
			return
		}
		_, _ = w.Write(b)
	})
	mux.HandleFunc("/env", func(w http.ResponseWriter, r *http.Request) {
		v, ok := os.LookupEnv(r.URL.Query().Get("name"))
		if !ok {
			http.Error(w, "unset", http.StatusNotFound)
			return
		}
		_, _ = fmt.Fprint(w, v)
	})
	mux.HandleFunc("/write", func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.Query().Get("path")
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			http.Error(w, err.Error(), http.StatusForbidden)
			return
		}
		_ = os.Remove(p)
		_, _ = fmt.Fprintln(w, "written")
	})
	srv := &http.Server{Addr: *listen, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		s := <-sig
		fmt.Printf("podapp: %v\n", s)
		if *markerDir != "" {
			_ = os.WriteFile(filepath.Join(*markerDir, podName), []byte("SIGTERM"), 0o644)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}()
	fmt.Printf("podapp: serving on %s as uid %d\n", *listen, os.Getuid())
	if err := srv.ListenAndServe(); err != nil && err != http.ErrServerClosed {
		fmt.Fprintf(os.Stderr, "podapp: %v\n", err)
		os.Exit(1)
	}
}
