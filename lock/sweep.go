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
// deleted lease (e.g. a job run's "deliveries") are deleted after it. Work
// goes in pages of 300 documents through a BulkWriter.
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

// deleteLeases deletes each document on its read update time, then the
// documents of its subcollections.
func deleteLeases(ctx context.Context, client *firestore.Client, snaps []*firestore.DocumentSnapshot, subcollections []string) (int, error) {
	if len(snaps) == 0 {
		return 0, nil
	}
	bw := client.BulkWriter(ctx)
	jobs := make([]*firestore.BulkWriterJob, len(snaps))
	for i, s := range snaps {
		j, err := bw.Delete(s.Ref, firestore.LastUpdateTime(s.UpdateTime))
		if err != nil {
			bw.End()
			return 0, err
		}
		jobs[i] = j
	}
	bw.End()
	var gone []*firestore.DocumentRef
	var errs []error
	for i, j := range jobs {
		_, err := j.Results()
		switch {
		case err == nil:
			gone = append(gone, snaps[i].Ref)
		case status.Code(err) != codes.FailedPrecondition && status.Code(err) != codes.NotFound:
			errs = append(errs, err) // a precondition failure is a lease that moved on: keep it
		}
	}
	for _, ref := range gone {
		for _, sub := range subcollections {
			children, err := ref.Collection(sub).DocumentRefs(ctx).GetAll()
			if err != nil {
				errs = append(errs, err)
				continue
			}
			if len(children) == 0 {
				continue
			}
			cw := client.BulkWriter(ctx)
			for _, c := range children {
				if _, err := cw.Delete(c); err != nil {
					errs = append(errs, err)
				}
			}
			cw.End()
		}
	}
	return len(gone), errors.Join(errs...)
}
