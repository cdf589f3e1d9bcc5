package lockx_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stampede-lab/stampede/internal/lockx"
	"github.com/stampede-lab/stampede/internal/redistest"
)

// exampleRedis connects to the private server the tests start for the
// Examples; in a service, the client of your Redis, with
// ContextTimeoutEnabled (New refuses a client without).
func exampleRedis() *redis.Client {
	return redis.NewClient(&redis.Options{Addr: os.Getenv(redistest.ExampleAddrEnv), ContextTimeoutEnabled: true})
}

func Example() {
	rdb := exampleRedis()
	defer rdb.Close()
	locker, err := lockx.New([]redis.UniversalClient{rdb}, lockx.Options{Name: "example_inventory", TTL: 5 * time.Second})
	if err != nil {
		log.Fatal(err)
	}
	defer locker.Close()
	ctx := context.Background()

	lock, err := locker.Acquire(ctx, "sku-42")
	if err != nil {
		log.Fatal(err) // lockx.ErrNotAcquired when someone else held it all along
	}
	defer lock.Release()

	// Work under the lock's context: it ends if the lock is lost.
	select {
	case <-lock.Context().Done():
		fmt.Println("lost:", context.Cause(lock.Context()))
	default:
		fmt.Println("held, token > 0:", lock.Token() > 0)
	}
	// Output: held, token > 0: true
}

func ExampleLocker_Do() {
	rdb := exampleRedis()
	defer rdb.Close()
	locker, err := lockx.New([]redis.UniversalClient{rdb}, lockx.Options{Name: "example_report", TTL: 5 * time.Second})
	if err != nil {
		log.Fatal(err)
	}
	defer locker.Close()

	err = locker.Do(context.Background(), "nightly", func(ctx context.Context, token int64) error {
		// Write with the token; storage rejects older tokens (package pgfence).
		return nil
	})
	fmt.Println(err, errors.Is(err, lockx.ErrLost))
	// Output: <nil> false
}

func ExampleLocker_TryAcquire() {
	rdb := exampleRedis()
	defer rdb.Close()
	locker, err := lockx.New([]redis.UniversalClient{rdb}, lockx.Options{Name: "example_try", TTL: 5 * time.Second})
	if err != nil {
		log.Fatal(err)
	}
	defer locker.Close()
	ctx := context.Background()

	first, err := locker.TryAcquire(ctx, "sku-7")
	if err != nil {
		log.Fatal(err)
	}
	// One attempt, no waiting: held by another is ErrNotAcquired; servers
	// that do not answer would be ErrUnavailable.
	_, err = locker.TryAcquire(ctx, "sku-7")
	fmt.Println(errors.Is(err, lockx.ErrNotAcquired), errors.Is(err, lockx.ErrUnavailable))
	_ = first.Release()
	// Output: true false
}

func ExampleNew_redlock() {
	// Five independent masters: a lock needs three. Create every client with
	// ContextTimeoutEnabled (New refuses one without): every call then ends
	// at its Timeout, and a dead or paused node costs nothing while three
	// others answer.
	var nodes []redis.UniversalClient
	for _, addr := range []string{"127.0.0.1:7001", "127.0.0.1:7002", "127.0.0.1:7003", "127.0.0.1:7004", "127.0.0.1:7005"} {
		nodes = append(nodes, redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true}))
	}
	locker, err := lockx.New(nodes, lockx.Options{Name: "inventory", TTL: 10 * time.Second})
	fmt.Println(err == nil)
	_ = locker.Close()
	// Output: true
}

func ExampleOptions_handOver() {
	rdb := exampleRedis()
	defer rdb.Close()
	// A hot lock with many waiters: queue them, and hand the lock to the
	// first one on release (one server only).
	locker, err := lockx.New([]redis.UniversalClient{rdb}, lockx.Options{Name: "example_fair", TTL: 5 * time.Second, HandOver: true})
	if err != nil {
		log.Fatal(err)
	}
	defer locker.Close()
	ctx := context.Background()

	first, err := locker.Acquire(ctx, "hot")
	if err != nil {
		log.Fatal(err)
	}
	next := make(chan *lockx.Lock)
	go func() {
		lock, err := locker.Acquire(ctx, "hot") // queues behind first
		if err != nil {
			log.Fatal(err)
		}
		next <- lock
	}()
	time.Sleep(50 * time.Millisecond) // let it queue
	_ = first.Release()               // hands the lock over
	second := <-next
	fmt.Println("handed over with a larger token:", second.Token() > first.Token())
	_ = second.Release()
	// Output: handed over with a larger token: true
}
