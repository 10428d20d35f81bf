//! The project's sessions as every handler sees them (docs/backend.md, "Store"): reads bound
//! to the backend's project and taking typed IDs, and one write-and-publish path, so a change
//! to a session is written in one transaction and then goes to every client as
//! `session.updated` carrying the session as stored.

use ax_protocol::{AgentState, Event, Permission, Session, SessionId};
use rusqlite::Connection;

use crate::{
    events::EventBus,
    state::App,
    store::{self, Result, Store},
};

/// The store seen from one project, with the bus its session changes are published on.
#[derive(Clone, Copy)]
pub struct Sessions<'a> {
    store: &'a Store,
    project: i64,
    bus: &'a EventBus,
}

impl<'a> Sessions<'a> {
    pub fn new(store: &'a Store, project: i64, bus: &'a EventBus) -> Self {
        Sessions {
            store,
            project,
            bus,
        }
    }

    /// The session, if this project has it.
    pub async fn get(&self, id: &SessionId) -> Result<Option<Session>> {
        let (project, id) = (self.project, id.clone());
        self.store
            .read(move |c| store::get_session(c, project, id.as_str()))
            .await
    }

    /// The project's sessions, most recent activity first.
    pub async fn list(&self, limit: Option<u32>) -> Result<Vec<Session>> {
        let project = self.project;
        self.store
            .read(move |c| store::list_sessions(c, project, limit))
            .await
    }

    /// Pending approvals of the project's sessions, oldest first.
    pub async fn pending_permissions(&self) -> Result<Vec<Permission>> {
        let project = self.project;
        self.store
            .read(move |c| store::pending_permissions(c, project))
            .await
    }

    /// Stores a new session; `session.created` goes to everyone once it is committed.
    pub async fn create(&self, session: Session) -> Result<Session> {
        let (project, bus) = (self.project, self.bus.clone());
        self.store
            .write(move |c| {
                store::insert_session(c, project, &session)?;
                // Before any change of it can be published (see `update`).
                bus.publish(Event::SessionCreated {
                    session: session.clone(),
                });
                Ok(session)
            })
            .await
    }

    /// Deletes the session with its transcript; `false` when this project has no such session.
    /// Publishing `session.deleted` is the caller's, once what ran in the session is stopped.
    pub async fn delete(&self, id: &SessionId) -> Result<bool> {
        let (project, id) = (self.project, id.clone());
        self.store
            .write(move |c| store::delete_session(c, project, id.as_str()))
            .await
    }

    /// Runs `change` in one write transaction with the project and the session's ID; when it
    /// returns the session as it now is, that is committed first and then published as
    /// `session.updated`. `None` (no such session, nothing changed) publishes nothing.
    ///
    /// The event is published while the writer connection is still held, so the session's
    /// states go out in the order they were committed: two tasks changing one session at once
    /// (a turn ending, the agent's offers kept) can never leave a client with the older state
    /// last. Every write that publishes a session does the same (`turn::core`).
    pub async fn update<F>(&self, id: &SessionId, change: F) -> Result<Option<Session>>
    where
        F: FnOnce(&Connection, i64, &str) -> Result<Option<Session>> + Send + 'static,
    {
        let (project, id, bus) = (self.project, id.clone(), self.bus.clone());
        self.store
            .write(move |c| {
                let tx = store::begin_write(c)?;
                let session = change(&tx, project, id.as_str())?;
                tx.commit()?;
                if let Some(session) = &session {
                    bus.publish(Event::SessionUpdated {
                        session: session.clone(),
                    });
                }
                Ok(session)
            })
            .await
    }
}

impl App {
    /// The project's sessions (see [`Sessions`]).
    pub fn sessions(&self) -> Sessions<'_> {
        Sessions::new(&self.store, self.project_id, &self.bus)
    }

    /// Writes a change to session `id` in one transaction and publishes it (see
    /// [`Sessions::update`]).
    pub async fn update_session<F>(&self, id: &SessionId, change: F) -> Result<Option<Session>>
    where
        F: FnOnce(&Connection, i64, &str) -> Result<Option<Session>> + Send + 'static,
    {
        self.sessions().update(id, change).await
    }

    /// Changes session `id`'s agent state (what the agent told us: modes, config options, …)
    /// in one transaction and publishes the session; `None` when there is no such session.
    pub async fn update_agent_state<F>(&self, id: &SessionId, change: F) -> Result<Option<Session>>
    where
        F: FnOnce(&mut AgentState) + Send + 'static,
    {
        self.update_session(id, move |tx, project, sid| {
            let Some(session) = store::get_session(tx, project, sid)? else {
                return Ok(None);
            };
            let mut state = session.agent_state.unwrap_or_default();
            change(&mut state);
            store::set_agent_state(tx, sid, &state)?;
            store::get_session(tx, project, sid)
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use ax_protocol::SessionStatus;

    use super::*;

    fn session(id: &str, title: &str) -> Session {
        Session {
            id: id.parse().unwrap(),
            title: title.into(),
            created: 1,
            updated: 1,
            status: SessionStatus::Idle,
            agent: "shell".into(),
            agent_state: None,
            standing: Vec::new(),
        }
    }

    fn next(
        live: &mut tokio::sync::broadcast::Receiver<std::sync::Arc<crate::events::Published>>,
    ) -> Event {
        live.try_recv()
            .expect("an event was published")
            .event
            .clone()
    }

    /// Many tasks changing one session at once: the `session.updated` events go out in the
    /// order the changes were committed, so the last one a client gets is the state stored
    /// last, and every title appears once. (Published after the writer was released, two
    /// events could swap and leave a client with an older state.)
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn concurrent_updates_are_published_in_commit_order() {
        let tmp = tempfile::tempdir().unwrap();
        let store = Store::open(tmp.path()).unwrap();
        let project = store
            .write_blocking(|c| store::project_id(c, "/a"))
            .unwrap();
        let bus = EventBus::new(1024);
        let sessions = Sessions::new(&store, project, &bus);
        let a = sessions
            .create(session("ses_0123456789abABCDEFGHIJKLMN", ""))
            .await
            .unwrap();
        let mut live = bus.subscribe(None).live;
        let tasks: Vec<_> = (0..64)
            .map(|i| {
                let (store, bus, id) = (store.clone(), bus.clone(), a.id.clone());
                tokio::spawn(async move {
                    Sessions::new(&store, project, &bus)
                        .update(&id, move |c, project, id| {
                            store::rename_session(c, project, id, &format!("t{i}"), i)
                        })
                        .await
                        .unwrap()
                })
            })
            .collect();
        for task in tasks {
            task.await.unwrap();
        }
        let mut titles = Vec::new();
        while let Ok(envelope) = live.try_recv() {
            if let Event::SessionUpdated { session } = &envelope.event {
                titles.push(session.title.clone());
            }
        }
        let stored = sessions.get(&a.id).await.unwrap().unwrap();
        assert_eq!(titles.len(), 64);
        assert_eq!(titles.last(), Some(&stored.title), "{titles:?}");
        let mut unique = titles.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), 64, "{titles:?}");
    }

    /// A change is committed before `session.updated` goes out (a reader sees it when the
    /// event arrives), it carries the session as stored, a change returning `None` publishes
    /// nothing, and another project's session is neither seen nor changed.
    #[tokio::test]
    async fn an_update_is_stored_then_published_as_stored() {
        let tmp = tempfile::tempdir().unwrap();
        let store = Store::open(tmp.path()).unwrap();
        let (mine, theirs) = store
            .write_blocking(|c| Ok((store::project_id(c, "/a")?, store::project_id(c, "/b")?)))
            .unwrap();
        let bus = EventBus::new(16);
        let sessions = Sessions::new(&store, mine, &bus);
        let other = Sessions::new(&store, theirs, &bus);
        let mut live = bus.subscribe(None).live;

        let a = sessions
            .create(session("ses_0123456789abABCDEFGHIJKLMN", ""))
            .await
            .unwrap();
        assert!(matches!(next(&mut live), Event::SessionCreated { session } if session == a));

        let renamed = sessions
            .update(&a.id, |c, project, id| {
                store::rename_session(c, project, id, "renamed", 5)
            })
            .await
            .unwrap()
            .expect("the session exists");
        assert_eq!((renamed.title.as_str(), renamed.updated), ("renamed", 5));
        let Event::SessionUpdated { session: sent } = next(&mut live) else {
            panic!("session.updated expected");
        };
        assert_eq!(sent, renamed);
        // Stored before it was published: what a reload reads is what was sent.
        assert_eq!(sessions.get(&a.id).await.unwrap(), Some(sent));

        // Nothing changed (already titled): nothing published.
        let none = sessions
            .update(&a.id, |c, project, id| {
                store::offer_title(c, project, id, "x", store::OfferedTitle::Prompt)
            })
            .await
            .unwrap();
        assert_eq!(none, None);
        assert!(live.try_recv().is_err());

        // Bound to the project: the other project neither sees nor renames it.
        assert_eq!(other.get(&a.id).await.unwrap(), None);
        assert!(other.list(None).await.unwrap().is_empty());
        let foreign = other
            .update(&a.id, |c, project, id| {
                store::rename_session(c, project, id, "stolen", 9)
            })
            .await
            .unwrap();
        assert_eq!(foreign, None);
        assert!(live.try_recv().is_err());
        assert_eq!(sessions.list(None).await.unwrap()[0].title, "renamed");
        assert!(sessions.pending_permissions().await.unwrap().is_empty());
    }

    /// A change that fails is rolled back whole and publishes nothing.
    #[tokio::test]
    async fn a_failed_update_is_rolled_back_and_not_published() {
        let tmp = tempfile::tempdir().unwrap();
        let store = Store::open(tmp.path()).unwrap();
        let project = store
            .write_blocking(|c| store::project_id(c, "/a"))
            .unwrap();
        let bus = EventBus::new(16);
        let sessions = Sessions::new(&store, project, &bus);
        let a = sessions
            .create(session("ses_0123456789abABCDEFGHIJKLMN", "kept"))
            .await
            .unwrap();
        let mut live = bus.subscribe(None).live;
        let failed = sessions
            .update(&a.id, |c, project, id| {
                store::rename_session(c, project, id, "lost", 5)?;
                Err(store::StoreError::Task("failed on purpose".into()))
            })
            .await;
        assert!(failed.is_err());
        assert!(live.try_recv().is_err());
        assert_eq!(sessions.get(&a.id).await.unwrap().unwrap().title, "kept");
    }
}
