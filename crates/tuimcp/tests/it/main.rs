//! Integration tests of ax-tuimcp: the controller with a fake clock, the endpoint over real
//! sockets, and property tests of the frame parser and request validation.

mod controller;
mod endpoint;
mod props;
mod util;
