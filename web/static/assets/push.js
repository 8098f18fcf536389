// push.js: notifications that reach a closed tab (Web Push). The service
// worker (sw.js) is registered when the page loads; permission to notify
// is asked only when the reader clicks "Notify me", and the browser's
// subscription is then handed to the server (POST /v1/push/subscriptions).

import { api } from './api.js';

const SW = '/assets/sw.js';

export class Push {
  constructor(button, msg) {
    this.button = button;
    this.msg = msg;
    this.reg = null;
    button.hidden = true;
    if (!('serviceWorker' in navigator) || !('PushManager' in window) || !('Notification' in window)) return;
    this.ready = navigator.serviceWorker.register(SW).then((reg) => { this.reg = reg; return reg; }).catch(() => null);
    button.addEventListener('click', () => this.toggle());
  }

  // paint shows the button as the browser's subscription stands.
  async paint() {
    const reg = await this.ready;
    if (!reg) return;
    this.button.hidden = false;
    const sub = await reg.pushManager.getSubscription().catch(() => null);
    const on = !!sub && Notification.permission === 'granted';
    this.button.textContent = on ? 'Notifications on' : 'Notify me';
    this.button.setAttribute('aria-pressed', String(on));
  }

  say(text) { this.msg.textContent = text; }

  async toggle() {
    const reg = await this.ready;
    if (!reg) return;
    this.button.disabled = true;
    try {
      const sub = await reg.pushManager.getSubscription();
      if (sub && this.button.getAttribute('aria-pressed') === 'true') {
        await this.off(sub);
      } else {
        await this.on(reg);
      }
    } catch (e) {
      this.say(e.message || String(e));
    } finally {
      this.button.disabled = false;
      await this.paint();
    }
  }

  async on(reg) {
    // The only place the permission is asked: a click.
    if (await Notification.requestPermission() !== 'granted') {
      this.say('Notifications are blocked for this page in the browser’s settings.');
      return;
    }
    const { public_key: key } = await api('GET', '/v1/push/key');
    const sub = await reg.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: key });
    await api('POST', '/v1/push/subscriptions', sub.toJSON());
    this.say('You will be notified here, even with this page closed.');
  }

  async off(sub) {
    const page = await api('GET', '/v1/push/subscriptions');
    const mine = page.data.find((s) => s.endpoint === sub.endpoint);
    if (mine) await api('DELETE', `/v1/push/subscriptions/${mine.id}`);
    await sub.unsubscribe();
    this.say('Notifications are off for this browser.');
  }
}
