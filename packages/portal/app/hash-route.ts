import { useEffect, useState } from 'preact/hooks';
import { parseRoute, type Route } from './routes.js';

/** The route of `location.hash`, following every change. */
export function useHashRoute(): Route {
  const [route, setRoute] = useState(() => parseRoute(location.hash));
  useEffect(() => {
    const follow = () => setRoute(parseRoute(location.hash));
    window.addEventListener('hashchange', follow);
    return () => window.removeEventListener('hashchange', follow);
  }, []);
  return route;
}
