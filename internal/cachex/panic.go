package cachex

import (
	"errors"
	"fmt"
	"runtime/debug"
)

// ErrLoaderPanic is matched (errors.Is) by the error that every waiter of a
// load gets when the loader panicked. errors.As with *LoaderPanic gives the
// panic's value and stack.
var ErrLoaderPanic = errors.New("cachex: loader panicked")

// LoaderPanic is a loader's panic, recovered on the goroutine the load ran
// on: loads run on goroutines cachex starts, where neither the caller's
// recover nor net/http's can catch a panic, so an unrecovered one would end
// the process.
type LoaderPanic struct {
	Value any    // what the loader panicked with
	Stack []byte // the stack of the goroutine that panicked
}

func (p *LoaderPanic) Error() string { return fmt.Sprintf("cachex: loader panicked: %v", p.Value) }

// Is reports whether target is ErrLoaderPanic.
func (p *LoaderPanic) Is(target error) bool { return target == ErrLoaderPanic }

// Unwrap returns the panic's value when it is an error (panic(err)).
func (p *LoaderPanic) Unwrap() error {
	err, _ := p.Value.(error)
	return err
}

// protect runs load, turning a panic into a *LoaderPanic error that it logs
// once.
func protect[T any](c interface{ logPanic(*LoaderPanic) }, load func() (T, error)) (v T, err error) {
	defer func() {
		if r := recover(); r != nil {
			p := &LoaderPanic{Value: r, Stack: debug.Stack()}
			c.logPanic(p)
			var zero T
			v, err = zero, p
		}
	}()
	return load()
}

// logPanic logs a loader's panic, with its stack, once.
func (c *Cache[V]) logPanic(p *LoaderPanic) {
	if c.opts.Logger != nil {
		c.opts.Logger.Error("cachex: loader panicked", "cache", c.opts.Name, "panic", fmt.Sprint(p.Value), "stack", string(p.Stack))
	}
}
