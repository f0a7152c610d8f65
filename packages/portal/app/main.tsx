import { render } from 'preact';
import './portal.css';
import { applyAccent, readPageConfig } from './page-config-reader.js';
import { PortalApp } from './portal-app.js';

const config = readPageConfig();
applyAccent(config.brand.accentColor);
render(<PortalApp config={config} />, document.getElementById('app')!);
