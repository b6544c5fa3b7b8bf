package main

import (
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Flag values are checked where they are parsed, in one way: a flag whose
// value can be wrong has a flag.Value that refuses it in Set, saying what
// it wants, so that the flag package reports it through parseFlags (bad
// usage: exit 2, with the usage), whether it was given on the command
// line, as a mount option (-o) or taken from an interrupted run's record
// (compress --resume). The types here are those several commands share;
// Size (size.go), modeFlag and fusemount.Serving are the others.

// A countFlag is an int flag of at least 1: workers, jobs, rounds.
type countFlag int

func (c *countFlag) String() string { return strconv.Itoa(int(*c)) }

func (c *countFlag) Set(s string) error {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n < 1 {
		return fmt.Errorf("want a whole number, 1 or more")
	}
	*c = countFlag(n)
	return nil
}

// A durationFlag is a duration flag that is never negative.
type durationFlag time.Duration

func (d *durationFlag) String() string { return time.Duration(*d).String() }

func (d *durationFlag) Set(s string) error {
	v, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil || v < 0 {
		return fmt.Errorf("want a duration such as 30s, 1m or 0")
	}
	*d = durationFlag(v)
	return nil
}

// A boolFlag is a flag that is on when given alone (--as-v2), or given
// true or false.
type boolFlag bool

func (b *boolFlag) String() string   { return strconv.FormatBool(bool(*b)) }
func (b *boolFlag) IsBoolFlag() bool { return true }

func (b *boolFlag) Set(s string) error {
	v, err := strconv.ParseBool(s)
	if err != nil {
		return fmt.Errorf("want true or false, or the flag alone")
	}
	*b = boolFlag(v)
	return nil
}

// A layoutFlag is --layout: "stored" (the default) or "native".
type layoutFlag string

func (l *layoutFlag) String() string {
	if *l == "" {
		return "stored"
	}
	return string(*l)
}

func (l *layoutFlag) Set(s string) error {
	if s != "stored" && s != "native" {
		return fmt.Errorf("want stored or native")
	}
	*l = layoutFlag(s)
	return nil
}

// btoi is 1 for true.
func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// A levelFlag is --log-level.
type levelFlag slog.Level

func (l *levelFlag) String() string { return strings.ToLower(slog.Level(*l).String()) }

func (l *levelFlag) Set(s string) error {
	var v slog.Level
	if err := v.UnmarshalText([]byte(s)); err != nil {
		return fmt.Errorf("want debug, info, warn or error")
	}
	*l = levelFlag(v)
	return nil
}

// A choiceFlag is a string flag that takes one of a few words.
type choiceFlag struct {
	p       *string
	choices []string
}

// choice returns the flag value that sets *p to one of choices.
func choice(p *string, choices ...string) choiceFlag { return choiceFlag{p, choices} }

func (c choiceFlag) String() string {
	if c.p == nil {
		return ""
	}
	return *c.p
}

func (c choiceFlag) Set(s string) error {
	if !slices.Contains(c.choices, s) {
		return fmt.Errorf("want %s", orList(c.choices))
	}
	*c.p = s
	return nil
}

// orList is "a, b or c".
func orList(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}

// A checkedFlag is a string flag whose value check parses (and refuses)
// at Set; the command parses the value again with the same function when
// it uses it.
type checkedFlag struct {
	p     *string
	check func(string) error
}

// checked returns the flag value that sets *p to what check accepts.
func checked(p *string, check func(string) error) checkedFlag { return checkedFlag{p, check} }

func (c checkedFlag) String() string {
	if c.p == nil {
		return ""
	}
	return *c.p
}

func (c checkedFlag) Set(s string) error {
	if err := c.check(s); err != nil {
		return err
	}
	*c.p = s
	return nil
}
