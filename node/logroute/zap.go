package logroute

import (
	"context"
	"log/slog"
	"slices"

	"go.uber.org/zap/zapcore"
)

// zapToSlog is a zapcore.Core writing go-log's zap records to an
// slog.Handler, so kad-dht's and pebble's go-log loggers reach the node's
// logger.
type zapToSlog struct {
	h      slog.Handler
	fields []zapcore.Field
}

func (c *zapToSlog) Enabled(l zapcore.Level) bool {
	return c.h.Enabled(context.Background(), zapLevelToSlog(l))
}

func (c *zapToSlog) With(fields []zapcore.Field) zapcore.Core {
	return &zapToSlog{h: c.h, fields: append(slices.Clip(c.fields), fields...)}
}

func (c *zapToSlog) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(e.Level) {
		return ce.AddCore(e, c)
	}
	return ce
}

func (c *zapToSlog) Write(e zapcore.Entry, fields []zapcore.Field) error {
	rec := slog.NewRecord(e.Time, zapLevelToSlog(e.Level), e.Message, 0)
	if e.LoggerName != "" {
		rec.AddAttrs(slog.String("logger", e.LoggerName))
	}
	enc := zapcore.NewMapObjectEncoder()
	for _, f := range c.fields {
		f.AddTo(enc)
	}
	for _, f := range fields {
		f.AddTo(enc)
	}
	for k, v := range enc.Fields {
		rec.AddAttrs(slog.Any(k, v))
	}
	return c.h.Handle(context.Background(), rec)
}

func (c *zapToSlog) Sync() error { return nil }

func zapLevelToSlog(l zapcore.Level) slog.Level {
	switch {
	case l <= zapcore.DebugLevel:
		return slog.LevelDebug
	case l == zapcore.InfoLevel:
		return slog.LevelInfo
	case l == zapcore.WarnLevel:
		return slog.LevelWarn
	default:
		return slog.LevelError
	}
}
