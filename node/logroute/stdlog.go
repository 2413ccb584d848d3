package logroute

import (
	"context"
	"log/slog"
	"os"
	"strings"
	"time"
)

// stdlogWriter is the output of the standard library's log package: a
// library that logs with log.Printf (zeroconf, used for mDNS and DNS-SD,
// writes "[zeroconf] …", "[WARN] mdns: …", "[ERR] zeroconf: …") reaches
// the node's handler as one record, with the bracketed tag as its level
// or logger name. With no node registered, lines go to stderr unchanged
// (slog's default handler writes to the log package, which would loop).
type stdlogWriter struct{ r *router }

func (w stdlogWriter) Write(p []byte) (int, error) {
	t, h, min := w.r.currentTarget()
	if t == nil {
		return os.Stderr.Write(p)
	}
	level, logger, msg := parseStdlog(strings.TrimRight(string(p), "\n"))
	if level < min.Level() || !h.Enabled(context.Background(), level) {
		return len(p), nil
	}
	rec := slog.NewRecord(time.Now(), level, msg, 0)
	rec.AddAttrs(slog.String("logger", logger))
	return len(p), h.Handle(context.Background(), rec)
}

// parseStdlog splits a line of the log package into level, logger and
// message: "[ERR] zeroconf: failed" is an error of logger zeroconf,
// "[zeroconf] no suitable interface" a warning of zeroconf, anything else
// a warning of logger "stdlog".
func parseStdlog(line string) (slog.Level, string, string) {
	level, logger := slog.LevelWarn, "stdlog"
	if tag, rest, ok := strings.Cut(line, "] "); ok && strings.HasPrefix(tag, "[") {
		switch tag = tag[1:]; strings.ToUpper(tag) {
		case "ERR", "ERROR":
			level = slog.LevelError
		case "WARN", "WARNING":
		case "INFO":
			level = slog.LevelInfo
		case "DEBUG":
			level = slog.LevelDebug
		default:
			logger = tag
		}
		line = rest
		if name, msg, ok := strings.Cut(line, ": "); ok && logger == "stdlog" && !strings.Contains(name, " ") {
			logger, line = name, msg
		}
	}
	return level, logger, line
}
