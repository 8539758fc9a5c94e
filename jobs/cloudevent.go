package jobs

import (
	"encoding/json"
	"fmt"
	"time"
)

// CloudEvent is what FromCloudEvent reads of a CloudEvent. The Functions
// Framework's event.Event (github.com/cloudevents/sdk-go/v2/event), which a
// function registered with functions.CloudEvent receives, has these
// methods.
type CloudEvent interface {
	Source() string
	ID() string
	Time() time.Time
	Data() []byte
}

// pubsubMessage is the data of a Pub/Sub CloudEvent
// (google.cloud.pubsub.topic.v1.messagePublished).
type pubsubMessage struct {
	Message *struct {
		Data        []byte    `json:"data"` // base64 in JSON
		MessageID   string    `json:"messageId"`
		PublishTime time.Time `json:"publishTime"`
	} `json:"message"`
}

// FromCloudEvent is the Event of a Pub/Sub message delivered as a
// CloudEvent: by Eventarc (a 2nd-gen Cloud Function triggered by a topic),
// or by a push subscription through the Functions Framework, which turns
// the push body into the same event. Its data is the message published,
// {"message": {"data": <base64>, "messageId", "publishTime", ...},
// "subscription"}; Source and ID are the CloudEvent's (the ID is the
// message ID), PublishTime the message's, else the CloudEvent's time. Data
// that is not such a message, or an event without a source or an id (which
// EventKey needs), gives an error wrapping ErrBadPayload: no delivery can
// fix it, so acknowledge it (see Acknowledge). No RPC.
func FromCloudEvent(e CloudEvent) (Event, error) {
	if e.Source() == "" || e.ID() == "" {
		// The run is keyed by both (EventKey): without them every such
		// event would be one run, all but the first AlreadyDone.
		return Event{}, fmt.Errorf("%w: the CloudEvent has no source or id (source %q, id %q)", ErrBadPayload, e.Source(), e.ID())
	}
	var d pubsubMessage
	if err := json.Unmarshal(e.Data(), &d); err != nil {
		return Event{}, fmt.Errorf("%w: the CloudEvent's data is not a Pub/Sub message: %v", ErrBadPayload, err)
	}
	if d.Message == nil {
		return Event{}, fmt.Errorf("%w: the CloudEvent's data has no Pub/Sub message", ErrBadPayload)
	}
	published := d.Message.PublishTime
	if published.IsZero() {
		published = e.Time() // the CloudEvent's time is the publish time too
	}
	return Event{Source: e.Source(), ID: e.ID(), PublishTime: published, Data: d.Message.Data}, nil
}
