package lock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// SweepEnded deletes the lease documents of collection whose lease ended at
// least after ago, by Firestore's clock, and returns how many it deleted.
// It never deletes a live lease: the local clock only narrows the query, each
// document is judged against the read time of its snapshot, and each delete
// is conditioned on the update time it was read with (a lease renewed or
// taken over meanwhile stays). Documents in the named subcollections of a
// deleted lease (e.g. a job run's "deliveries") are deleted before it. Work
// goes in pages of 300 documents: one query per page, then a conditional
// delete per ended lease (through a BulkWriter, batched), and a read and a
// delete of each deleted lease's fence; subcollections add a listing and
// a delete per document.
func SweepEnded(ctx context.Context, client *firestore.Client, collection string, after time.Duration, subcollections ...string) (int, error) {
	const page = 300
	// Leases last at most MaxLeaseDuration, so nothing renewed after this
	// can have ended `after` ago; clients' leases (300s) are shorter still.
	cutoff := time.Now().Add(-after - MaxLeaseDuration)
	q := client.Collection(collection).Where(FieldRenewedAt, "<", cutoff).OrderBy(FieldRenewedAt, firestore.Asc).Limit(page)
	deleted := 0
	var errs []error
	var last *firestore.DocumentSnapshot
	for {
		pq := q
		if last != nil {
			pq = q.StartAfter(last)
		}
		snaps, err := pq.Documents(ctx).GetAll()
		if err != nil {
			return deleted, fmt.Errorf("lock: sweep %s: %w", collection, err)
		}
		var ended []*firestore.DocumentSnapshot
		for _, s := range snaps {
			if d := decodeLease(s); !s.ReadTime.Before(d.end().Add(after)) {
				ended = append(ended, s)
			}
		}
		n, err := deleteLeases(ctx, client, ended, subcollections)
		deleted += n
		if err != nil {
			errs = append(errs, err)
		}
		if len(snaps) < page {
			return deleted, errors.Join(errs...)
		}
		last = snaps[len(snaps)-1]
	}
}

// deleteLeases deletes each document on its read update time. Documents in
// its subcollections go first, and a document whose children could not all
// be deleted is kept: a sweep cut short (or a delete retried after its
// answer was lost) then leaves the parent for the next sweep to find, never
// children under a parent that is gone. (Should a lease be taken over
// between the read and its delete, its old children are gone with the
// precondition-kept parent: they belonged to the ended lease.)
func deleteLeases(ctx context.Context, client *firestore.Client, snaps []*firestore.DocumentSnapshot, subcollections []string) (int, error) {
	var errs []error
	ready := snaps
	if len(subcollections) > 0 {
		ready = nil
		for _, s := range snaps {
			if err := deleteChildren(ctx, client, s.Ref, subcollections); err != nil {
				errs = append(errs, err)
				continue
			}
			ready = append(ready, s)
		}
	}
	if len(ready) == 0 {
		return 0, errors.Join(errs...)
	}
	bw := client.BulkWriter(ctx)
	jobs := make([]*firestore.BulkWriterJob, len(ready))
	for i, s := range ready {
		j, err := bw.Delete(s.Ref, firestore.LastUpdateTime(s.UpdateTime))
		if err != nil {
			bw.End()
			return 0, errors.Join(append(errs, err)...)
		}
		jobs[i] = j
	}
	bw.End()
	gone := 0
	for i, j := range jobs {
		_, err := j.Results()
		switch {
		case err == nil:
			gone++
			// Its fence after it: a grant that came in between wrote its
			// own, which deleteFence leaves.
			if ferr := deleteFence(ctx, client, ready[i].Ref, decodeLease(ready[i])); ferr != nil {
				errs = append(errs, fmt.Errorf("lock: fence of %s: %w", ready[i].Ref.ID, ferr))
			}
		case status.Code(err) != codes.FailedPrecondition && status.Code(err) != codes.NotFound:
			errs = append(errs, err) // a precondition failure is a lease that moved on, or already gone
		}
	}
	return gone, errors.Join(errs...)
}

// deleteChildren deletes every document of the named subcollections of ref.
func deleteChildren(ctx context.Context, client *firestore.Client, ref *firestore.DocumentRef, subcollections []string) error {
	var errs []error
	for _, sub := range subcollections {
		children, err := ref.Collection(sub).DocumentRefs(ctx).GetAll()
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if len(children) == 0 {
			continue
		}
		bw := client.BulkWriter(ctx)
		jobs := make([]*firestore.BulkWriterJob, 0, len(children))
		for _, c := range children {
			j, err := bw.Delete(c)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			jobs = append(jobs, j)
		}
		bw.End()
		for _, j := range jobs {
			if _, err := j.Results(); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("lock: delete %s's %v: %w", ref.ID, subcollections, errors.Join(errs...))
	}
	return nil
}
