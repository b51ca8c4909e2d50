package operator

import (
	"context"
	"errors"

	"github.com/go-logr/logr"
)

// errLeaderElectionLost is the text of the error controller-runtime's
// manager sends when its leader elector stops. It sends it on every stop,
// also the one a SIGTERM asks for, and logs it at error level when it
// arrives after the stop began.
const errLeaderElectionLost = "leader election lost"

// ShutdownLogger returns log, except that once ctx is done, errors that only
// say the process is stopping are logged at info level with "shutdown":
// true: the leader elector's "leader election lost" and requests cut short
// by the cancelled context. Before ctx ends every error stays an error;
// losing the Lease while running also still ends Run with an error. New
// gives the manager (and so the leader elector and the controllers) such a
// logger; `tagsync run` gives one to client-go's klog.
func ShutdownLogger(ctx context.Context, log logr.Logger) logr.Logger {
	return logr.New(&shutdownSink{LogSink: log.GetSink(), ctx: ctx})
}

// shutdownSink is the logr.LogSink of ShutdownLogger.
type shutdownSink struct {
	logr.LogSink
	ctx context.Context
}

// Error logs err at info level when it is part of an asked-for shutdown.
func (s *shutdownSink) Error(err error, msg string, keysAndValues ...any) {
	if s.ctx.Err() != nil && partOfShutdown(err) {
		s.LogSink.Info(0, msg, append(keysAndValues, "reason", err.Error(), "shutdown", true)...)
		return
	}
	s.LogSink.Error(err, msg, keysAndValues...)
}

// partOfShutdown reports whether err is what a stopping manager reports.
func partOfShutdown(err error) bool {
	return err != nil && (err.Error() == errLeaderElectionLost || errors.Is(err, context.Canceled))
}

// WithValues keeps the wrapper around the derived sink.
func (s *shutdownSink) WithValues(keysAndValues ...any) logr.LogSink {
	return &shutdownSink{LogSink: s.LogSink.WithValues(keysAndValues...), ctx: s.ctx}
}

// WithName keeps the wrapper around the derived sink.
func (s *shutdownSink) WithName(name string) logr.LogSink {
	return &shutdownSink{LogSink: s.LogSink.WithName(name), ctx: s.ctx}
}

// WithCallDepth keeps callers' file and line right when the wrapped sink
// reports them.
func (s *shutdownSink) WithCallDepth(depth int) logr.LogSink {
	if cd, ok := s.LogSink.(logr.CallDepthLogSink); ok {
		return &shutdownSink{LogSink: cd.WithCallDepth(depth), ctx: s.ctx}
	}
	return s
}
