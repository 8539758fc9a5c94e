// Package sale is the on-sale waiting room (CONTRACT §7): a hot screening
// opens for sale to far more people than it has seats, and the waiting room
// admits them in a fair order at a metered rate.
//
// A screening carries a sale in screenings/{id}.sale {opensAt,
// admitPerMinute, maxActive, passSeconds?, maxSeatsPerUser?}. Users join
// with Service.Join (the function JoinQueue): one place per user and sale,
// queue/{QueueID(screeningId, uid)}. Everyone who joined before opensAt is
// ranked at the opening by a random draw the server made at the join (kept
// in the server-only queueDraws until then); everyone who joined later is
// ranked by join time, behind them. The Admitter (the job admitQueue) admits
// places in that order: at most admitPerMinute in any minute and at most
// maxActive passes live, judged by Firestore's clock, under a lease per
// sale so that concurrent runs never admit a place twice. It publishes
// sales/{id} for everyone to read: the sale's state, how many wait, seats
// left, and marks from which a client estimates how many are ahead of it.
//
// Service is also booking's Gate: during a sale only a user with a live
// pass holds or books, up to maxSeatsPerUser seats, counted on the place
// in the same commit as the seats.
//
// The design, and how it stays within Firestore's documented limits at
// 200,000 joins a minute, is in docs/waiting-room.md.
package sale
