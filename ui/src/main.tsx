import '@mantine/core/styles.css';
import { Alert, AppShell, Badge, Button, Card, Center, Group, MantineProvider, NavLink, PasswordInput, Select, Stack, Text, TextInput, Title } from '@mantine/core';
import { useEffect, useState } from 'react';
import { createRoot } from 'react-dom/client';
import { ApiError, Viewer, VIEWER, getToken, gql, setToken } from './api';
import { AuditPage } from './pages/Audit';
import { FailuresPage } from './pages/Failures';
import { SchedulesPage } from './pages/Schedules';
import { WorkersPage } from './pages/Workers';
import { WorkflowPage } from './pages/Workflow';
import { WorkflowsPage } from './pages/Workflows';
import { SessionContext } from './shared';

const PAGES = [
  { path: 'workflows', label: 'Workflows' },
  { path: 'failures', label: 'Failures' },
  { path: 'schedules', label: 'Schedules' },
  { path: 'workers', label: 'Workers' },
  { path: 'audit', label: 'Audit' },
];

/** Hash routes (#/workflows, #/workflows/<id>, ...): the server answers /ui only. */
function useRoute(): [string[], (path: string) => void] {
  // A malformed escape (a truncated link) is kept as written: decodeURIComponent would throw and blank the page.
  const decode = (part: string) => {
    try {
      return decodeURIComponent(part);
    } catch {
      return part;
    }
  };
  const read = () => (window.location.hash.replace(/^#\/?/, '') || 'workflows').split('/').map(decode);
  const [route, setRoute] = useState(read);
  useEffect(() => {
    const onChange = () => setRoute(read());
    window.addEventListener('hashchange', onChange);
    return () => window.removeEventListener('hashchange', onChange);
  }, []);
  return [route, (path: string) => (window.location.hash = `#/${path}`)];
}

function Login({ onLogin }: { onLogin: (viewer: Viewer) => void }) {
  const [token, setValue] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const submit = async () => {
    setBusy(true);
    setError(null);
    try {
      const { viewer } = await gql<{ viewer: Viewer }>(VIEWER, {}, token.trim());
      setToken(token.trim());
      onLogin(viewer);
    } catch (e) {
      setError(e instanceof ApiError ? e.message : String(e));
    } finally {
      setBusy(false);
    }
  };
  return (
    <Center h="100vh">
      <Card withBorder shadow="sm" w={460} p="xl">
        <form
          onSubmit={(e) => {
            e.preventDefault();
            void submit();
          }}
        >
          <Stack>
            <Title order={2}>Baton</Title>
            <Text c="dimmed" size="sm">
              Enter an API token. It is kept in this tab only and sent with every request to /graphql.
            </Text>
            <PasswordInput label="API token" placeholder="baton_…" value={token} onChange={(e) => setValue(e.currentTarget.value)} autoFocus />
            {error && <Alert color="red">{error}</Alert>}
            <Button type="submit" loading={busy} disabled={!token.trim()}>
              Sign in
            </Button>
          </Stack>
        </form>
      </Card>
    </Center>
  );
}

const stored = (key: string, fallback: string) => localStorage.getItem(key) ?? fallback;

function App() {
  const [viewer, setViewer] = useState<Viewer | null>(null);
  const [checking, setChecking] = useState(!!getToken());
  const [route, navigate] = useRoute();
  const [appId, setAppId] = useState(() => stored('baton.app', ''));
  const [environment, setEnvironment] = useState(() => stored('baton.env', 'dev'));

  // The stored token is dropped only when the service refuses it: a page reloaded while the
  // service restarts (a 502 or 503 from a proxy, no answer at all) keeps it and offers to try again.
  const [checkError, setCheckError] = useState<string | null>(null);
  const [checks, setChecks] = useState(0);
  useEffect(() => {
    if (!getToken()) return;
    setChecking(true);
    setCheckError(null);
    gql<{ viewer: Viewer }>(VIEWER)
      .then(({ viewer }) => setViewer(viewer))
      .catch((e) => {
        if (e instanceof ApiError && (e.code === 'UNAUTHENTICATED' || e.code === 'FORBIDDEN')) setToken(null);
        else setCheckError(e instanceof ApiError ? `${e.code}: ${e.message}` : String(e));
      })
      .finally(() => setChecking(false));
  }, [checks]);
  useEffect(() => {
    if (viewer && (!appId || (!viewer.apps.includes('*') && !viewer.apps.includes(appId)))) setAppId(viewer.apps.find((a) => a !== '*') ?? 'demo');
    if (viewer?.environments && !viewer.environments.includes(environment)) setEnvironment(viewer.environments[0]);
  }, [viewer]);
  useEffect(() => localStorage.setItem('baton.app', appId), [appId]);
  useEffect(() => localStorage.setItem('baton.env', environment), [environment]);

  if (checking) return null;
  if (!viewer && checkError && getToken())
    return (
      <Center h="100vh">
        <Card withBorder shadow="sm" w={460} p="xl">
          <Stack>
            <Title order={2}>Baton</Title>
            <Alert color="red" data-testid="check-error">
              The service did not answer: {checkError}
            </Alert>
            <Group>
              <Button onClick={() => setChecks((n) => n + 1)}>Try again</Button>
              <Button
                variant="default"
                onClick={() => {
                  setToken(null);
                  setCheckError(null);
                }}
              >
                Sign out
              </Button>
            </Group>
          </Stack>
        </Card>
      </Center>
    );
  if (!viewer) return <Login onLogin={setViewer} />;

  const scope = { appId, environment };
  const [page, id] = route;
  const canControl = viewer.capabilities.includes('control');
  const content =
    page === 'workflows' && id ? (
      <WorkflowPage id={id} />
    ) : page === 'failures' ? (
      <FailuresPage />
    ) : page === 'schedules' ? (
      <SchedulesPage />
    ) : page === 'workers' ? (
      <WorkersPage />
    ) : page === 'audit' ? (
      <AuditPage />
    ) : (
      <WorkflowsPage />
    );

  return (
    <SessionContext.Provider value={{ viewer, scope, canControl, navigate }}>
      <AppShell header={{ height: 56 }} navbar={{ width: 180, breakpoint: 0 }} padding="md">
        <AppShell.Header>
          <Group h="100%" px="md" justify="space-between">
            <Group>
              <Title order={4}>Baton</Title>
              {viewer.apps.includes('*') ? (
                <TextInput aria-label="App" size="xs" value={appId} onChange={(e) => setAppId(e.currentTarget.value)} w={140} />
              ) : (
                <Select aria-label="App" size="xs" data={viewer.apps} value={appId} onChange={(v) => v && setAppId(v)} w={140} allowDeselect={false} />
              )}
              {viewer.environments ? (
                <Select aria-label="Environment" size="xs" data={viewer.environments} value={environment} onChange={(v) => v && setEnvironment(v)} w={140} allowDeselect={false} />
              ) : (
                <TextInput aria-label="Environment" size="xs" value={environment} onChange={(e) => setEnvironment(e.currentTarget.value)} w={140} />
              )}
            </Group>
            <Group>
              <Badge variant="outline" data-testid="role">
                {viewer.role}
              </Badge>
              <Text size="xs" c="dimmed">
                {viewer.label ?? viewer.tokenId}
              </Text>
              <Button
                size="xs"
                variant="default"
                onClick={() => {
                  setToken(null);
                  setViewer(null);
                }}
              >
                Sign out
              </Button>
            </Group>
          </Group>
        </AppShell.Header>
        <AppShell.Navbar p="xs">
          {PAGES.map((p) => (
            <NavLink key={p.path} label={p.label} href={`#/${p.path}`} active={page === p.path} />
          ))}
        </AppShell.Navbar>
        <AppShell.Main>{appId && environment ? content : <Text>Choose an app and an environment.</Text>}</AppShell.Main>
      </AppShell>
    </SessionContext.Provider>
  );
}

createRoot(document.getElementById('root')!).render(
  <MantineProvider defaultColorScheme="light">
    <App />
  </MantineProvider>,
);
