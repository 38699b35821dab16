package main

import (
	"fmt"
	"io"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/gatewayd/gatewayd/config"
)

// newLogger builds the one logger of the process: JSON for journald and log
// tools, or console for a terminal. Components get children named after
// them (logger.Named("store")).
func newLogger(cfg config.Log, w io.Writer) (*zap.Logger, error) {
	level, err := zapcore.ParseLevel(cfg.Level)
	if err != nil {
		return nil, &config.Error{Key: "log.level", Msg: fmt.Sprintf("invalid level %q", cfg.Level)}
	}
	var enc zapcore.Encoder
	switch cfg.Format {
	case "console":
		ec := zap.NewDevelopmentEncoderConfig()
		ec.EncodeLevel = zapcore.CapitalLevelEncoder
		enc = zapcore.NewConsoleEncoder(ec)
	default:
		ec := zap.NewProductionEncoderConfig()
		ec.TimeKey = "ts"
		ec.EncodeTime = zapcore.RFC3339NanoTimeEncoder
		ec.MessageKey = "event" // messages are stable event names (turn.completed, ...)
		enc = zapcore.NewJSONEncoder(ec)
	}
	core := zapcore.NewCore(enc, zapcore.Lock(zapcore.AddSync(w)), level)
	return zap.New(core, zap.ErrorOutput(zapcore.Lock(zapcore.AddSync(w)))), nil
}
